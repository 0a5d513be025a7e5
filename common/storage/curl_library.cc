#include "common/storage/curl_library.h"

#include <dlfcn.h>

#include <string>
#include <type_traits>

#include <fmt/format.h>

namespace clusterd {
namespace {

// The soname of Debian's libcurl4 (the OpenSSL build the headers came from).
constexpr const char* kSoname = "libcurl.so.4";

Result<CurlLibrary> Open() {
  void* handle = dlopen(kSoname, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    return Status::FailedPrecondition(
        fmt::format("S3 storage needs {} (Debian package libcurl4): {}", kSoname, dlerror()));
  }
  CurlLibrary lib{};
  std::string missing;
  auto bind = [&](auto* fn, const char* name) {
    *fn = reinterpret_cast<std::remove_pointer_t<decltype(fn)>>(dlsym(handle, name));
    if (!*fn) missing += missing.empty() ? name : std::string(", ") + name;
  };
  bind(&lib.easy_init, "curl_easy_init");
  bind(&lib.easy_cleanup, "curl_easy_cleanup");
  bind(&lib.easy_reset, "curl_easy_reset");
  bind(&lib.easy_setopt, "curl_easy_setopt");
  bind(&lib.easy_getinfo, "curl_easy_getinfo");
  bind(&lib.easy_perform, "curl_easy_perform");
  bind(&lib.easy_strerror, "curl_easy_strerror");
  bind(&lib.slist_append, "curl_slist_append");
  bind(&lib.slist_free_all, "curl_slist_free_all");
  CURLcode (*global_init)(long) = nullptr;
  bind(&global_init, "curl_global_init");
  if (!missing.empty()) {
    return Status::FailedPrecondition(fmt::format("{} lacks {}: S3 storage needs libcurl 7.75 or later", kSoname, missing));
  }
  // Once, before any handle; never undone (the library stays for the process).
  if (CURLcode code = global_init(CURL_GLOBAL_DEFAULT); code != CURLE_OK) {
    return Status::FailedPrecondition(fmt::format("curl_global_init failed: {}", lib.easy_strerror(code)));
  }
  return lib;
}

}  // namespace

Result<const CurlLibrary*> LoadCurl() {
  static const Result<CurlLibrary> loaded = Open();
  if (!loaded.ok()) return loaded.status();
  return &*loaded;
}

}  // namespace clusterd
