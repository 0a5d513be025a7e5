#include "daemon/http/dashboard_page.h"

#include <array>
#include <cstddef>
#include <utility>

// The bytes of daemon/http/assets/*, compiled in by clusterd_embed_files
// (daemon/CMakeLists.txt).
namespace clusterd::embedded {
extern const unsigned char dashboard_html[];
extern const std::size_t dashboard_html_size;
extern const unsigned char dashboard_css[];
extern const std::size_t dashboard_css_size;
extern const unsigned char dashboard_js[];
extern const std::size_t dashboard_js_size;
extern const unsigned char common_js[];
extern const std::size_t common_js_size;
extern const unsigned char chart_js[];
extern const std::size_t chart_js_size;
extern const unsigned char usage_js[];
extern const std::size_t usage_js_size;
extern const unsigned char job_js[];
extern const std::size_t job_js_size;
extern const unsigned char sweep_js[];
extern const std::size_t sweep_js_size;
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
  constexpr std::string_view kCss = "text/css; charset=utf-8", kJs = "text/javascript; charset=utf-8";
  using Named = std::pair<std::string_view, DashboardAsset>;
  static const std::array<Named, 7> assets = {{
      {"dashboard.css", {kCss, Bytes(embedded::dashboard_css, embedded::dashboard_css_size)}},
      {"common.js", {kJs, Bytes(embedded::common_js, embedded::common_js_size)}},
      {"chart.js", {kJs, Bytes(embedded::chart_js, embedded::chart_js_size)}},
      {"usage.js", {kJs, Bytes(embedded::usage_js, embedded::usage_js_size)}},
      {"job.js", {kJs, Bytes(embedded::job_js, embedded::job_js_size)}},
      {"sweep.js", {kJs, Bytes(embedded::sweep_js, embedded::sweep_js_size)}},
      {"dashboard.js", {kJs, Bytes(embedded::dashboard_js, embedded::dashboard_js_size)}},
  }};
  if (!IsDashboardAssetPath(path)) return nullptr;
  path.remove_prefix(kAssetsPrefix.size());
  for (const auto& [name, asset] : assets) {
    if (name == path) return &asset;
  }
  return nullptr;
}

}  // namespace clusterd
