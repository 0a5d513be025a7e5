// The XML of S3's answers, read with expat: error codes (<Code>), listing
// pages (<Key>, <IsTruncated>, <NextContinuationToken>), multipart upload
// ids (<UploadId>). Elements are found by their local name, so a default
// namespace (S3's own xmlns) and a prefixed one (<s3:Key>) read the same.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace clusterd {

// One S3 answer's elements and their text, in document order.
class S3XmlAnswer {
 public:
  // Parses `xml`; text that is not well-formed XML, or that declares a
  // DOCTYPE (S3 sends none, and entities are how XML bombs work), is an
  // error naming expat's reason, line and column.
  static Result<S3XmlAnswer> Parse(const std::string& xml);

  // The local name of the outermost element ("Error", "ListBucketResult").
  const std::string& root() const { return root_; }
  // The text directly inside every element of that local name, entities
  // decoded, in order.
  std::vector<std::string> Values(const std::string& name) const;
  // The first one, "" when there is none.
  std::string Value(const std::string& name) const;

 private:
  friend class S3XmlReader;
  std::string root_;
  std::vector<std::pair<std::string, std::string>> elements_;  // (local name, text)
};

// The S3 error code in an answer's body ("NoSuchKey"), "" when the body
// holds none or is no XML at all (an empty HEAD answer, a proxy's HTML page).
std::string S3ErrorCode(const std::string& body);

// `text` escaped for an element's content.
std::string XmlEscape(const std::string& text);

}  // namespace clusterd
