// SPDX-License-Identifier: GPL-2.0
#include "cairo_canvas.hpp"

#include <cairo-pdf.h>
#include <cairo.h>
#include <pango/pangocairo.h>

#include <cmath>
#include <memory>
#include <numbers>

#include "cdsm/error.hpp"

namespace cdsm::cdsmctl::picture {
namespace {

template <class T, void (*Free)(T*)>
struct Deleter {
    void operator()(T* p) const noexcept { Free(p); }
};
using Surface = std::unique_ptr<cairo_surface_t, Deleter<cairo_surface_t, cairo_surface_destroy>>;
using Context = std::unique_ptr<cairo_t, Deleter<cairo_t, cairo_destroy>>;
using FontOptions = std::unique_ptr<cairo_font_options_t,
                                    Deleter<cairo_font_options_t, cairo_font_options_destroy>>;
using FontDescription = std::unique_ptr<PangoFontDescription,
                                        Deleter<PangoFontDescription, pango_font_description_free>>;

void unref_layout(PangoLayout* layout) {
    g_object_unref(layout);
}
using Layout = std::unique_ptr<PangoLayout, Deleter<PangoLayout, unref_layout>>;

void check(cairo_status_t status, const char* what) {
    if (status != CAIRO_STATUS_SUCCESS)
        throw cdsm::Error(what, std::string("cairo failed: ") + cairo_status_to_string(status));
}

// A pango layout of `text` on `cr`. Metrics are not hinted, so that text measures the same on
// the measuring surface, the PNG and the PDF.
Layout text_layout(cairo_t* cr, const std::string& text, double size, bool bold) {
    const FontOptions options(cairo_font_options_create());
    cairo_font_options_set_hint_metrics(options.get(), CAIRO_HINT_METRICS_OFF);
    cairo_set_font_options(cr, options.get());
    Layout layout(pango_cairo_create_layout(cr));
    pango_cairo_context_set_font_options(pango_layout_get_context(layout.get()), options.get());
    pango_layout_context_changed(layout.get());
    const FontDescription font(pango_font_description_from_string(kFontFamilies));
    pango_font_description_set_absolute_size(font.get(), size * PANGO_SCALE);
    pango_font_description_set_weight(font.get(), bold ? PANGO_WEIGHT_BOLD : PANGO_WEIGHT_NORMAL);
    pango_layout_set_font_description(layout.get(), font.get());
    pango_layout_set_text(layout.get(), text.data(), static_cast<int>(text.size()));
    return layout;
}

double layout_width(PangoLayout* layout) {
    int width = 0, height = 0;
    pango_layout_get_size(layout, &width, &height);
    return static_cast<double>(width) / PANGO_SCALE;
}

Surface raster_surface(const Raster& raster) {
    Surface surface(cairo_image_surface_create(CAIRO_FORMAT_RGB24, raster.width, raster.height));
    check(cairo_surface_status(surface.get()), "raster");
    unsigned char* data = cairo_image_surface_get_data(surface.get());
    const int stride = cairo_image_surface_get_stride(surface.get());
    for (int y = 0; y < raster.height; ++y) {
        auto* row =
            reinterpret_cast<std::uint32_t*>(data + static_cast<std::ptrdiff_t>(y) * stride);
        for (int x = 0; x < raster.width; ++x) {
            const Rgb c = raster.pixels[static_cast<std::size_t>(y * raster.width + x)];
            row[x] = (std::uint32_t{c.r} << 16) | (std::uint32_t{c.g} << 8) | c.b;
        }
    }
    cairo_surface_mark_dirty(surface.get());
    return surface;
}

cairo_status_t write_to_sink(void* closure, const unsigned char* data, unsigned int length) {
    try {
        (*static_cast<const Sink*>(closure))(
            std::string_view(reinterpret_cast<const char*>(data), length));
        return CAIRO_STATUS_SUCCESS;
    } catch (...) {
        return CAIRO_STATUS_WRITE_ERROR;
    }
}

class CairoCanvas final : public Canvas {
  public:
    explicit CairoCanvas(cairo_t* cr) : cr_(cr) {}

    void fill(const Box& b, Rgb c) override {
        set_colour(c);
        cairo_rectangle(cr_, b.x, b.y, b.w, b.h);
        cairo_fill(cr_);
    }

    void frame(const Box& b) override {
        set_colour({});
        cairo_set_line_width(cr_, 1);
        cairo_rectangle(cr_, b.x - 0.5, b.y - 0.5, b.w + 1, b.h + 1);
        cairo_stroke(cr_);
    }

    void line(double x1, double y1, double x2, double y2) override {
        set_colour({});
        cairo_set_line_width(cr_, 1);
        cairo_move_to(cr_, x1, y1);
        cairo_line_to(cr_, x2, y2);
        cairo_stroke(cr_);
    }

    void text(const Text& t) override {
        const Layout layout = text_layout(cr_, t.text, t.size, t.bold);
        const double width = layout_width(layout.get());
        const double shift = t.anchor == Anchor::kStart    ? 0
                             : t.anchor == Anchor::kMiddle ? width / 2
                                                           : width;
        cairo_save(cr_);
        set_colour({});
        cairo_translate(cr_, t.x, t.y);
        if (t.vertical) cairo_rotate(cr_, -std::numbers::pi / 2);
        cairo_move_to(cr_, -shift,
                      -static_cast<double>(pango_layout_get_baseline(layout.get())) / PANGO_SCALE);
        pango_cairo_update_layout(cr_, layout.get());
        pango_cairo_show_layout(cr_, layout.get());
        cairo_restore(cr_);
    }

    void raster(const Box& b, const Raster& r) override {
        if (r.width <= 0 || r.height <= 0) return;
        const Surface image = raster_surface(r);
        cairo_save(cr_);
        cairo_translate(cr_, b.x, b.y);
        cairo_scale(cr_, b.w / r.width, b.h / r.height);
        cairo_set_source_surface(cr_, image.get(), 0, 0);
        // One task pair is one sharp-edged square, at any zoom (PDF: /Interpolate false).
        cairo_pattern_set_filter(cairo_get_source(cr_), CAIRO_FILTER_NEAREST);
        cairo_rectangle(cr_, 0, 0, r.width, r.height);
        cairo_fill(cr_);
        cairo_restore(cr_);
    }

  private:
    void set_colour(Rgb c) { cairo_set_source_rgb(cr_, c.r / 255.0, c.g / 255.0, c.b / 255.0); }
    cairo_t* cr_;
};

}  // namespace

struct TextMeasure::State {
    Surface surface{cairo_image_surface_create(CAIRO_FORMAT_RGB24, 1, 1)};
    Context cr{cairo_create(surface.get())};
};

TextMeasure::TextMeasure() : state_(std::make_unique<State>()) {
    check(cairo_status(state_->cr.get()), "text measure");
}

TextMeasure::~TextMeasure() = default;

double TextMeasure::width(const std::string& text, double size, bool bold) const {
    return layout_width(text_layout(state_->cr.get(), text, size, bold).get());
}

void render_with_cairo(PictureFormat format, int width, int height,
                       const std::function<void(Canvas&)>& draw, const Sink& sink) {
    const bool pdf = format == PictureFormat::kPdf;
    Surface surface(pdf ? cairo_pdf_surface_create_for_stream(
                              write_to_sink, const_cast<Sink*>(&sink), width, height)
                        : cairo_image_surface_create(CAIRO_FORMAT_RGB24, width, height));
    check(cairo_surface_status(surface.get()), pdf ? "PDF surface" : "PNG surface");
    if (pdf) cairo_pdf_surface_set_metadata(surface.get(), CAIRO_PDF_METADATA_CREATOR, "cdsmctl");
    {
        const Context cr(cairo_create(surface.get()));
        CairoCanvas canvas(cr.get());
        draw(canvas);
        check(cairo_status(cr.get()), "drawing");
    }
    if (pdf) {
        cairo_surface_finish(surface.get());
        check(cairo_surface_status(surface.get()), "PDF");
    } else {
        check(cairo_surface_write_to_png_stream(surface.get(), write_to_sink,
                                                const_cast<Sink*>(&sink)),
              "PNG");
    }
}

std::string raster_png(const Raster& raster) {
    std::string out;
    const Sink sink = [&](std::string_view bytes) { out.append(bytes); };
    const Surface surface = raster_surface(raster);
    check(cairo_surface_write_to_png_stream(surface.get(), write_to_sink, const_cast<Sink*>(&sink)),
          "PNG");
    return out;
}

}  // namespace cdsm::cdsmctl::picture
