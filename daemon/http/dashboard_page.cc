#include "daemon/http/dashboard_page.h"

#include <cstddef>

// The bytes of daemon/http/assets/*, compiled in by clusterd_embed_files
// (daemon/CMakeLists.txt).
namespace clusterd::embedded {
extern const unsigned char dashboard_html[];
extern const std::size_t dashboard_html_size;
extern const unsigned char dashboard_css[];
extern const std::size_t dashboard_css_size;
extern const unsigned char dashboard_js[];
extern const std::size_t dashboard_js_size;
}  // namespace clusterd::embedded

namespace clusterd {

namespace {

constexpr std::string_view kAssetsPrefix = "/assets/";

std::string_view Bytes(const unsigned char* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace

std::string_view DashboardDocument() { return Bytes(embedded::dashboard_html, embedded::dashboard_html_size); }

bool IsDashboardAssetPath(std::string_view path) { return path.substr(0, kAssetsPrefix.size()) == kAssetsPrefix; }

const DashboardAsset* FindDashboardAsset(std::string_view path) {
  // Built on first use: the embedded arrays live in other translation
  // units, so they are not constants here.
  static const DashboardAsset css{"text/css; charset=utf-8",
                                  Bytes(embedded::dashboard_css, embedded::dashboard_css_size)};
  static const DashboardAsset js{"text/javascript; charset=utf-8",
                                 Bytes(embedded::dashboard_js, embedded::dashboard_js_size)};
  if (path == "/assets/dashboard.css") return &css;
  if (path == "/assets/dashboard.js") return &js;
  return nullptr;
}

}  // namespace clusterd
