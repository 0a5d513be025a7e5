// The dashboard's pages are the files under daemon/http/assets/, byte for
// byte, compiled into the daemon: each page is the document, and its style
// and script come from /assets/ with their own content types, to anyone
// (they hold no cluster data); any other /assets/ path is a 404.
#include <catch2/catch.hpp>

#include <fstream>
#include <iterator>
#include <optional>
#include <string>

#include "daemon/http/dashboard.h"
#include "daemon/http/dashboard_page.h"

using namespace clusterd;

namespace {

const std::string kToken = "dashboard-page-test-token";

std::string AssetFile(const std::string& name) {
  const std::string path = std::string(CLUSTERD_SOURCE_DIR) + "/daemon/http/assets/" + name;
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

HttpReply Get(const Dashboard& dashboard, const std::string& target, const std::string& cookie = "") {
  HttpRequest request;
  request.method = "GET";
  request.target = target;
  request.cookie = cookie;
  std::optional<HttpReply> reply = dashboard.AnswerAtOnce(request);
  REQUIRE(reply.has_value());  // pages and assets need no head state
  return *reply;
}

std::optional<std::string> Header(const HttpReply& reply, const std::string& name) {
  for (const auto& [key, value] : reply.headers) {
    if (key == name) return value;
  }
  return std::nullopt;
}

}  // namespace

TEST_CASE("dashboard page: every page is dashboard.html, byte for byte", "[http][dashboard]") {
  // Pages and assets are answered without the head's loop or core.
  Dashboard dashboard(nullptr, nullptr, kToken);
  const std::string document = AssetFile("dashboard.html");
  REQUIRE(DashboardDocument() == document);
  for (const std::string target : {"/", "/index.html", "/jobs?state=FAILED", "/job?id=job-0001", "/sweeps", "/sweep",
                                   "/store"}) {
    INFO(target);
    HttpReply page = Get(dashboard, target, "clusterd_token=" + kToken);
    REQUIRE(page.status == 200);
    REQUIRE(page.content_type == "text/html; charset=utf-8");
    REQUIRE(page.body == document);
    // The page's script and style are only those of this origin.
    const auto policy = Header(page, "Content-Security-Policy");
    REQUIRE(policy.has_value());
    REQUIRE(policy->find("script-src 'self';") != std::string::npos);
  }
  // The document loads its style and script from where they are served.
  REQUIRE(document.find("<link rel=\"stylesheet\" href=\"/assets/dashboard.css\">") != std::string::npos);
  // Its scripts in the order they build on each other, the page's entry last.
  size_t previous = 0;
  for (const std::string script : {"common.js", "chart.js", "usage.js", "job.js", "sweep.js", "dashboard.js"}) {
    INFO(script);
    const size_t at = document.find("<script src=\"/assets/" + script + "\"></script>");
    REQUIRE(at != std::string::npos);
    REQUIRE(at >= previous);
    previous = at;
  }
}

TEST_CASE("dashboard page: the style and script are the asset files, with their content types", "[http][dashboard]") {
  Dashboard dashboard(nullptr, nullptr, kToken);
  for (const auto& [name, type] : {std::pair<std::string, std::string>{"dashboard.css", "text/css; charset=utf-8"},
                                   {"common.js", "text/javascript; charset=utf-8"},
                                   {"chart.js", "text/javascript; charset=utf-8"},
                                   {"usage.js", "text/javascript; charset=utf-8"},
                                   {"job.js", "text/javascript; charset=utf-8"},
                                   {"sweep.js", "text/javascript; charset=utf-8"},
                                   {"dashboard.js", "text/javascript; charset=utf-8"}}) {
    INFO(name);
    const std::string file = AssetFile(name);
    REQUIRE_FALSE(file.empty());
    // No token: they are the same for everyone and hold no cluster data.
    HttpReply asset = Get(dashboard, "/assets/" + name);
    REQUIRE(asset.status == 200);
    REQUIRE(asset.content_type == type);
    REQUIRE(asset.body == file);
    // The server adds Cache-Control: no-store to every reply; a second one would contradict it.
    REQUIRE_FALSE(Header(asset, "Cache-Control").has_value());
    REQUIRE(Header(asset, "X-Content-Type-Options") == std::optional<std::string>("nosniff"));
  }
}

TEST_CASE("dashboard page: an unknown asset is a 404 naming it, and a write to an asset is refused",
          "[http][dashboard]") {
  Dashboard dashboard(nullptr, nullptr, kToken);
  for (const std::string target : {"/assets/nope.js", "/assets/", "/assets/dashboard.html", "/assets/../dashboard.js",
                                   "/assets/dashboard.js/x"}) {
    INFO(target);
    HttpReply missing = Get(dashboard, target);
    REQUIRE(missing.status == 404);
    REQUIRE(missing.body.find("no such asset: " + target) != std::string::npos);
  }
  // A page path outside /assets/ that is no page still needs the token first.
  REQUIRE(Get(dashboard, "/dashboard.js").status == 401);
  HttpRequest put;
  put.method = "PUT";
  put.target = "/assets/dashboard.js";
  std::optional<HttpReply> refused = dashboard.AnswerAtOnce(put);
  REQUIRE(refused.has_value());
  REQUIRE(refused->status == 405);
}
