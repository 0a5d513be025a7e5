#include "common/storage/s3_xml.h"

#include <expat.h>

#include <memory>

#include <fmt/format.h>

namespace clusterd {

namespace {

// Between a namespace's URI and an element's local name in the names
// expat reports ("http://s3.amazonaws.com/doc/2006-03-01/\x1fKey"): a
// character no URI holds.
constexpr char kNamespaceSeparator = '\x1f';

std::string LocalName(const XML_Char* name) {
  const std::string full(name);
  const size_t separator = full.rfind(kNamespaceSeparator);
  return separator == std::string::npos ? full : full.substr(separator + 1);
}

struct ParserDeleter {
  void operator()(XML_ParserStruct* parser) const { XML_ParserFree(parser); }
};

}  // namespace

// Collects each element's direct text as expat walks the document.
class S3XmlReader {
 public:
  explicit S3XmlReader(S3XmlAnswer* answer) : answer_(answer) {}

  Status Read(const std::string& xml) {
    std::unique_ptr<XML_ParserStruct, ParserDeleter> parser(XML_ParserCreateNS(nullptr, kNamespaceSeparator));
    if (!parser) return Status::Internal("cannot create an XML parser: out of memory?");
    parser_ = parser.get();
    XML_SetUserData(parser_, this);
    XML_SetElementHandler(parser_, OnStart, OnEnd);
    XML_SetCharacterDataHandler(parser_, OnText);
    XML_SetStartDoctypeDeclHandler(parser_, OnDoctype);
    if (XML_Parse(parser_, xml.data(), static_cast<int>(xml.size()), XML_TRUE) == XML_STATUS_OK) {
      return Status::Ok();
    }
    const std::string reason =
        doctype_ ? "it declares a DOCTYPE" : XML_ErrorString(XML_GetErrorCode(parser_));
    return Status::Corruption(fmt::format("S3 answered malformed XML: {} at line {}, column {}", reason,
                                          XML_GetCurrentLineNumber(parser_), XML_GetCurrentColumnNumber(parser_)));
  }

 private:
  static void OnStart(void* user, const XML_Char* name, const XML_Char**) {
    auto* self = static_cast<S3XmlReader*>(user);
    std::string local = LocalName(name);
    if (self->open_.empty() && self->answer_->root_.empty()) self->answer_->root_ = local;
    self->open_.push_back(self->answer_->elements_.size());
    self->answer_->elements_.emplace_back(std::move(local), std::string());
  }
  static void OnEnd(void* user, const XML_Char*) { static_cast<S3XmlReader*>(user)->open_.pop_back(); }
  static void OnText(void* user, const XML_Char* text, int length) {
    auto* self = static_cast<S3XmlReader*>(user);
    if (!self->open_.empty()) self->answer_->elements_[self->open_.back()].second.append(text, length);
  }
  static void OnDoctype(void* user, const XML_Char*, const XML_Char*, const XML_Char*, int) {
    auto* self = static_cast<S3XmlReader*>(user);
    self->doctype_ = true;
    XML_StopParser(self->parser_, XML_FALSE);
  }

  S3XmlAnswer* answer_;
  XML_Parser parser_ = nullptr;
  std::vector<size_t> open_;  // indices into answer_->elements_ of the elements not yet closed
  bool doctype_ = false;
};

Result<S3XmlAnswer> S3XmlAnswer::Parse(const std::string& xml) {
  S3XmlAnswer answer;
  RETURN_IF_ERROR(S3XmlReader(&answer).Read(xml));
  return answer;
}

std::vector<std::string> S3XmlAnswer::Values(const std::string& name) const {
  std::vector<std::string> values;
  for (const auto& [element, text] : elements_) {
    if (element == name) values.push_back(text);
  }
  return values;
}

std::string S3XmlAnswer::Value(const std::string& name) const {
  for (const auto& [element, text] : elements_) {
    if (element == name) return text;
  }
  return "";
}

std::string S3ErrorCode(const std::string& body) {
  auto answer = S3XmlAnswer::Parse(body);
  return answer.ok() ? answer->Value("Code") : "";
}

std::string XmlEscape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

}  // namespace clusterd
