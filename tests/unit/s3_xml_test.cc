// The XML of S3's answers as the client reads it (expat): listing pages,
// error codes, upload ids, namespaces, and malformed text refused by name.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "common/storage/s3_xml.h"

namespace clusterd {
namespace {

TEST_CASE("S3 answers' XML gives element values with entities decoded", "[s3]") {
  std::string xml = "<ListBucketResult><Contents><Key>a&amp;b</Key></Contents><Contents><Key>c&lt;d</Key>"
                    "</Contents><IsTruncated>false</IsTruncated></ListBucketResult>";
  auto page = S3XmlAnswer::Parse(xml);
  REQUIRE(page.ok());
  CHECK(page->root() == "ListBucketResult");
  CHECK(page->Values("Key") == std::vector<std::string>{"a&b", "c<d"});
  CHECK(page->Value("IsTruncated") == "false");
  CHECK(page->Value("Code").empty());
  CHECK(XmlEscape("\"x\"&<y>") == "&quot;x&quot;&amp;&lt;y&gt;");
}

TEST_CASE("A ListObjectsV2 page as radosgw sends it gives its keys and continuation token", "[s3]") {
  const std::string xml =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
      "<Name>bucket</Name><Prefix>runs/</Prefix><MaxKeys>1000</MaxKeys><IsTruncated>true</IsTruncated>"
      "<Contents><Key>runs/a b</Key><LastModified>2026-01-01T00:00:00.000Z</LastModified>"
      "<ETag>&quot;9a0364b9e99bb480dd25e1f0284c8555&quot;</ETag><Size>7</Size>"
      "<Owner><ID>test</ID><DisplayName>test</DisplayName></Owner></Contents>"
      "<Contents><Key>runs/caf\xC3\xA9</Key><Size>1</Size></Contents>"
      "<KeyCount>2</KeyCount><NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>"
      "</ListBucketResult>";
  auto page = S3XmlAnswer::Parse(xml);
  REQUIRE(page.ok());
  CHECK(page->Values("Key") == std::vector<std::string>{"runs/a b", "runs/caf\xC3\xA9"});
  CHECK(page->Value("IsTruncated") == "true");
  CHECK(page->Value("NextContinuationToken") == "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=");
  CHECK(page->Value("ETag") == "\"9a0364b9e99bb480dd25e1f0284c8555\"");
}

TEST_CASE("Elements are found by their local name, whatever namespace prefix they carry", "[s3]") {
  const std::string xml =
      "<s3:InitiateMultipartUploadResult xmlns:s3=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
      "<s3:Bucket>b</s3:Bucket><s3:Key>k</s3:Key><s3:UploadId>2~abc&amp;def</s3:UploadId>"
      "</s3:InitiateMultipartUploadResult>";
  auto answer = S3XmlAnswer::Parse(xml);
  REQUIRE(answer.ok());
  CHECK(answer->root() == "InitiateMultipartUploadResult");
  CHECK(answer->Value("UploadId") == "2~abc&def");
  CHECK(answer->Value("Key") == "k");
}

TEST_CASE("An S3 error body gives its code, a body that is no XML gives none", "[s3]") {
  CHECK(S3ErrorCode("<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>NoSuchBucket</Code>"
                    "<Message></Message><BucketName>b</BucketName><RequestId>tx0</RequestId></Error>") ==
        "NoSuchBucket");
  CHECK(S3ErrorCode("").empty());                                  // a HEAD answer has no body
  CHECK(S3ErrorCode("<html><body>Bad Gateway</body></html>").empty());
  CHECK(S3ErrorCode("<html><body><Code>X</Code></body>").empty());  // cut off: not read as an S3 error
  CHECK(S3ErrorCode("<Error><Message>no code</Message></Error>").empty());
}

TEST_CASE("Malformed XML is refused with expat's reason, line and column", "[s3]") {
  auto cut = S3XmlAnswer::Parse("<ListBucketResult><Contents><Key>a</Key>");
  REQUIRE_FALSE(cut.ok());
  CHECK(cut.status().code() == Status::Code::kCorruption);
  CHECK(cut.status().message() == "S3 answered malformed XML: no element found at line 1, column 40");

  auto mismatched = S3XmlAnswer::Parse("<Error>\n<Code>X</Cod></Error>");
  REQUIRE_FALSE(mismatched.ok());
  CHECK(mismatched.status().message() == "S3 answered malformed XML: mismatched tag at line 2, column 9");

  auto empty = S3XmlAnswer::Parse("");
  REQUIRE_FALSE(empty.ok());
  CHECK_THAT(empty.status().message(), Catch::Contains("no element found"));

  auto text = S3XmlAnswer::Parse("not xml");
  REQUIRE_FALSE(text.ok());
  CHECK_THAT(text.status().message(), Catch::Contains("syntax error"));
}

TEST_CASE("An answer that declares a DOCTYPE is refused, so no entity is ever expanded", "[s3]") {
  auto bomb = S3XmlAnswer::Parse(
      "<?xml version=\"1.0\"?><!DOCTYPE lolz [<!ENTITY lol \"lol\"><!ENTITY lol2 \"&lol;&lol;&lol;&lol;\">]>"
      "<Error><Code>&lol2;</Code></Error>");
  REQUIRE_FALSE(bomb.ok());
  CHECK_THAT(bomb.status().message(), Catch::Contains("S3 answered malformed XML: it declares a DOCTYPE"));
  CHECK(S3ErrorCode("<!DOCTYPE x SYSTEM \"file:///etc/passwd\"><Error><Code>X</Code></Error>").empty());
}

}  // namespace
}  // namespace clusterd
