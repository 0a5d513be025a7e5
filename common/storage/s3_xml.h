// The little XML S3 answers need read: the text of elements by name
// (<Code>, <UploadId>, <Key>), entities decoded. S3's answers are flat and
// machine-made; this is not a general XML parser.
#pragma once

#include <string>
#include <vector>

namespace clusterd {

// Every <name>text</name> in `xml`, in order, with &amp; &lt; &gt; &quot; &apos; decoded.
std::vector<std::string> XmlValues(const std::string& xml, const std::string& name);
// The first one, "" when there is none.
std::string XmlValue(const std::string& xml, const std::string& name);
// `text` escaped for an element's content.
std::string XmlEscape(const std::string& text);

}  // namespace clusterd
