// The parts of an HTTP request target and headers the dashboard reads: the
// path, query parameters (percent-decoded), the query less one parameter,
// and a cookie's value. Pure functions over what the client sent; nothing
// here trusts it, callers check values.
#pragma once

#include <optional>
#include <string>

namespace clusterd {

// "/job?id=1" -> "/job".
std::string TargetPath(const std::string& target);
// The first `name=` parameter of the query, percent-decoded ('+' is a
// space); nullopt when absent or badly encoded.
std::optional<std::string> QueryParam(const std::string& target, const std::string& name);
// The target without any `name=` parameter, as sent otherwise ("/?token=T" -> "/").
std::string WithoutParam(const std::string& target, const std::string& name);
// The value of cookie `name` in a Cookie header ("a=1; b=2"), "" when absent.
std::string CookieValue(const std::string& header, const std::string& name);

}  // namespace clusterd
