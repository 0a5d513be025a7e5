// libcurl, opened when the first S3 request needs it instead of linked.
// Linked, it brings some 30 libraries (Kerberos, LDAP, GnuTLS, RTMP, SSH...)
// into every clusterctl and clusterd, and loading them is half of
// clusterctl's CPU at start (9 of 17.5 ms for `clusterctl --help`), paid by
// every `clusterctl status` though only S3 storage uses curl.
// Thread-safe.
#pragma once

#include <curl/curl.h>

#include "common/status.h"

namespace clusterd {

// The functions the S3 client calls, from the loaded library.
struct CurlLibrary {
  CURL* (*easy_init)();
  void (*easy_cleanup)(CURL*);
  void (*easy_reset)(CURL*);
  CURLcode (*easy_setopt)(CURL*, CURLoption, ...);
  CURLcode (*easy_getinfo)(CURL*, CURLINFO, ...);
  CURLcode (*easy_perform)(CURL*);
  const char* (*easy_strerror)(CURLcode);
  curl_slist* (*slist_append)(curl_slist*, const char*);
  void (*slist_free_all)(curl_slist*);
};

// Opens libcurl and runs curl_global_init, once per process; later calls
// return the same library, or the same error (naming the library and
// the package that has it).
Result<const CurlLibrary*> LoadCurl();

}  // namespace clusterd
