// SPDX-License-Identifier: GPL-2.0
// fmt's compiled part, once, in libcdsm: what its src/format.cc holds (Debian's libfmt-dev ships
// only the headers and libfmt.so). The rest of the project includes fmt's headers without
// FMT_HEADER_ONLY, so that each translation unit that formats no longer compiles fmt's
// implementation again: that took 6 s of each one (g++ -O2) and 11 s under the sanitizers, in
// three build trees (CI time, issue 27). A program of libcdsm still needs no libfmt.so, which
// would load libstdc++.so (cdsmctl links libstdc++ statically).
#include <fmt/format-inl.h>

FMT_BEGIN_NAMESPACE
namespace detail {

template FMT_API auto dragonbox::to_decimal(float x) noexcept -> dragonbox::decimal_fp<float>;
template FMT_API auto dragonbox::to_decimal(double x) noexcept -> dragonbox::decimal_fp<double>;

#ifndef FMT_STATIC_THOUSANDS_SEPARATOR
template FMT_API locale_ref::locale_ref(const std::locale& loc);
template FMT_API auto locale_ref::get<std::locale>() const -> std::locale;
#endif

template FMT_API auto thousands_sep_impl(locale_ref) -> thousands_sep_result<char>;
template FMT_API auto decimal_point_impl(locale_ref) -> char;
template FMT_API void buffer<char>::append(const char*, const char*);
template FMT_API void vformat_to(buffer<char>&, string_view,
                                 basic_format_args<FMT_BUFFER_CONTEXT(char)>, locale_ref);

template FMT_API auto thousands_sep_impl(locale_ref) -> thousands_sep_result<wchar_t>;
template FMT_API auto decimal_point_impl(locale_ref) -> wchar_t;
template FMT_API void buffer<wchar_t>::append(const wchar_t*, const wchar_t*);

}  // namespace detail
FMT_END_NAMESPACE
