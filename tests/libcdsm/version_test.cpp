// SPDX-License-Identifier: GPL-2.0
// The one version (VERSION) and what --version reports of the loaded module, against a fake
// sysfs directory (the real one is checked in the VM lab: tests/kmod/module-basics).
#include "cdsm/version.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>

namespace cdsm {
namespace {

namespace fs = std::filesystem;

class VersionReport : public ::testing::Test {
  protected:
    void SetUp() override {
        dir = fs::temp_directory_path() / ("cdsm-version-test." + std::to_string(::getpid()));
        fs::create_directories(dir);
    }
    void TearDown() override { fs::remove_all(dir); }
    void module_says(const std::string& text) { std::ofstream(dir / "version") << text; }
    fs::path dir;
};

TEST(Version, IsMajorMinorPatch) {
    EXPECT_TRUE(std::regex_match(std::string(version()), std::regex(R"(\d+\.\d+\.\d+)")))
        << version();
}

TEST_F(VersionReport, ModuleNotLoaded) {
    EXPECT_EQ(module_version(dir / "absent"), std::nullopt);
    EXPECT_EQ(version_report("cdsmctl", dir / "absent"),
              "cdsmctl " + std::string(version()) + "\ncdsm.ko not loaded\n");
}

TEST_F(VersionReport, ModuleAgrees) {
    module_says(std::string(version()) + "\n");
    EXPECT_EQ(module_version(dir), std::string(version()));
    EXPECT_EQ(version_report("cdsmd", dir), "cdsmd " + std::string(version()) + "\ncdsm.ko " +
                                                std::string(version()) + " (loaded)\n");
}

TEST_F(VersionReport, ModuleDiffers) {
    module_says("0.0.1\n");
    const std::string r = version_report("cdsmctl", dir);
    EXPECT_NE(r.find("cdsm.ko 0.0.1 (loaded; differs from cdsmctl " + std::string(version())),
              std::string::npos)
        << r;
}

}  // namespace
}  // namespace cdsm
