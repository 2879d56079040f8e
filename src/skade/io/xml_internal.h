// A small XML reader for S3's response bodies (ListObjectsV2, multipart, DeleteObjects, errors):
// elements, character data with the predefined and numeric entities decoded, CDATA; attributes,
// comments and processing instructions are skipped, DOCTYPE is refused. Private to io/.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "skade/base/status.h"

namespace skade::io {

struct XmlElement {
  std::string name;  // local name: a namespace prefix ("s3:Key") is dropped
  std::string text;  // the decoded character data directly inside, concatenated
  std::vector<XmlElement> children;

  // The first child of that name, or null (borrowed from this element).
  const XmlElement* Child(std::string_view child_name) const;
  // The text of the first child of that name, or "" when absent.
  std::string ChildText(std::string_view child_name) const;
  // Every child of that name, in document order (borrowed).
  std::vector<const XmlElement*> Children(std::string_view child_name) const;
};

// The root element of `xml`. kCorruption for malformed XML (unbalanced or mismatched tags,
// unknown entities, text outside the root, a DOCTYPE, nesting deeper than 256).
Result<XmlElement> ParseXml(std::string_view xml);

// `text` with & < > " ' replaced by entities, for element content and attribute values.
std::string XmlEscape(std::string_view text);

}  // namespace skade::io
