#include <cstdint>

#include "skade/io/xml_internal.h"

namespace skade::io {
namespace {

constexpr size_t kMaxDepth = 256;

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

bool IsNameChar(char c) {
  return !IsSpace(c) && c != '/' && c != '>' && c != '=' && c != '<' && c != '"' && c != '\'';
}

std::string_view LocalName(std::string_view name) {
  size_t colon = name.rfind(':');
  return colon == std::string_view::npos ? name : name.substr(colon + 1);
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// Appends `raw` character data with entity references decoded (XML 1.0 §4.1, §4.6).
Status DecodeText(std::string_view raw, std::string* out) {
  size_t i = 0;
  while (i < raw.size()) {
    size_t amp = raw.find('&', i);
    if (amp == std::string_view::npos) {
      out->append(raw.substr(i));
      break;
    }
    out->append(raw.substr(i, amp - i));
    size_t semi = raw.find(';', amp);
    if (semi == std::string_view::npos || semi - amp > 12) {
      return Status::Corruption("XML: unterminated entity reference");
    }
    std::string_view ref = raw.substr(amp + 1, semi - amp - 1);
    if (ref == "lt") {
      out->push_back('<');
    } else if (ref == "gt") {
      out->push_back('>');
    } else if (ref == "amp") {
      out->push_back('&');
    } else if (ref == "quot") {
      out->push_back('"');
    } else if (ref == "apos") {
      out->push_back('\'');
    } else if (ref.size() >= 2 && ref[0] == '#') {
      const bool hex = ref[1] == 'x';
      std::string_view digits = ref.substr(hex ? 2 : 1);
      if (digits.empty()) return Status::Corruption("XML: empty character reference");
      uint32_t cp = 0;
      for (char c : digits) {
        uint32_t d;
        if (c >= '0' && c <= '9') {
          d = static_cast<uint32_t>(c - '0');
        } else if (hex && c >= 'a' && c <= 'f') {
          d = static_cast<uint32_t>(c - 'a' + 10);
        } else if (hex && c >= 'A' && c <= 'F') {
          d = static_cast<uint32_t>(c - 'A' + 10);
        } else {
          return Status::Corruption("XML: bad character reference '&" + std::string(ref) + ";'");
        }
        cp = cp * (hex ? 16 : 10) + d;
        if (cp > 0x10FFFF) return Status::Corruption("XML: character reference out of range");
      }
      if (cp == 0 || (cp >= 0xD800 && cp <= 0xDFFF)) {
        return Status::Corruption("XML: character reference to a non-character");
      }
      AppendUtf8(cp, out);
    } else {
      return Status::Corruption("XML: unknown entity '&" + std::string(ref) + ";'");
    }
    i = semi + 1;
  }
  return Status::Ok();
}

bool OnlySpace(std::string_view s) {
  for (char c : s) {
    if (!IsSpace(c)) return false;
  }
  return true;
}

}  // namespace

const XmlElement* XmlElement::Child(std::string_view child_name) const {
  for (const XmlElement& c : children) {
    if (c.name == child_name) return &c;
  }
  return nullptr;
}

std::string XmlElement::ChildText(std::string_view child_name) const {
  const XmlElement* c = Child(child_name);
  return c == nullptr ? std::string() : c->text;
}

std::vector<const XmlElement*> XmlElement::Children(std::string_view child_name) const {
  std::vector<const XmlElement*> out;
  for (const XmlElement& c : children) {
    if (c.name == child_name) out.push_back(&c);
  }
  return out;
}

Result<XmlElement> ParseXml(std::string_view xml) {
  if (xml.substr(0, 3) == "\xEF\xBB\xBF") xml.remove_prefix(3);
  std::vector<XmlElement> stack;
  std::vector<std::string> raw_names;  // qualified names of the open elements, for end tags
  bool have_root = false;
  XmlElement root;
  size_t pos = 0;
  while (pos < xml.size()) {
    if (xml[pos] != '<') {
      size_t lt = xml.find('<', pos);
      if (lt == std::string_view::npos) lt = xml.size();
      std::string_view raw = xml.substr(pos, lt - pos);
      if (stack.empty()) {
        if (!OnlySpace(raw)) return Status::Corruption("XML: text outside the root element");
      } else {
        SKADE_RETURN_IF_ERROR(DecodeText(raw, &stack.back().text));
      }
      pos = lt;
      continue;
    }
    std::string_view rest = xml.substr(pos);
    if (rest.substr(0, 2) == "<?") {
      size_t end = xml.find("?>", pos + 2);
      if (end == std::string_view::npos) return Status::Corruption("XML: unterminated '<?'");
      pos = end + 2;
    } else if (rest.substr(0, 4) == "<!--") {
      size_t end = xml.find("-->", pos + 4);
      if (end == std::string_view::npos) return Status::Corruption("XML: unterminated comment");
      pos = end + 3;
    } else if (rest.substr(0, 9) == "<![CDATA[") {
      size_t end = xml.find("]]>", pos + 9);
      if (end == std::string_view::npos) return Status::Corruption("XML: unterminated CDATA");
      if (stack.empty()) return Status::Corruption("XML: CDATA outside the root element");
      stack.back().text.append(xml.substr(pos + 9, end - pos - 9));
      pos = end + 3;
    } else if (rest.substr(0, 2) == "<!") {
      // DOCTYPE and other declarations: S3 never sends them, and refusing them rules out
      // entity-expansion tricks.
      return Status::Corruption("XML: declarations ('<!') are not accepted");
    } else if (rest.substr(0, 2) == "</") {
      size_t name_start = pos + 2;
      size_t name_end = name_start;
      while (name_end < xml.size() && IsNameChar(xml[name_end])) ++name_end;
      std::string_view name = xml.substr(name_start, name_end - name_start);
      size_t gt = name_end;
      while (gt < xml.size() && IsSpace(xml[gt])) ++gt;
      if (gt >= xml.size() || xml[gt] != '>') return Status::Corruption("XML: malformed end tag");
      if (stack.empty() || raw_names.back() != name) {
        return Status::Corruption("XML: end tag '" + std::string(name) + "' does not match");
      }
      XmlElement done = std::move(stack.back());
      stack.pop_back();
      raw_names.pop_back();
      if (stack.empty()) {
        root = std::move(done);
        have_root = true;
      } else {
        stack.back().children.push_back(std::move(done));
      }
      pos = gt + 1;
    } else {
      if (have_root) return Status::Corruption("XML: more than one root element");
      size_t name_start = pos + 1;
      size_t i = name_start;
      while (i < xml.size() && IsNameChar(xml[i])) ++i;
      std::string_view name = xml.substr(name_start, i - name_start);
      if (name.empty()) return Status::Corruption("XML: malformed start tag");
      // Attributes: skipped, but quoted values are stepped over so a '>' inside one is fine.
      bool self_closing = false;
      while (true) {
        while (i < xml.size() && IsSpace(xml[i])) ++i;
        if (i >= xml.size()) return Status::Corruption("XML: unterminated start tag");
        if (xml[i] == '>') {
          ++i;
          break;
        }
        if (xml[i] == '/') {
          if (i + 1 >= xml.size() || xml[i + 1] != '>') {
            return Status::Corruption("XML: malformed start tag");
          }
          self_closing = true;
          i += 2;
          break;
        }
        while (i < xml.size() && IsNameChar(xml[i])) ++i;
        while (i < xml.size() && IsSpace(xml[i])) ++i;
        if (i >= xml.size() || xml[i] != '=') return Status::Corruption("XML: malformed attribute");
        ++i;
        while (i < xml.size() && IsSpace(xml[i])) ++i;
        if (i >= xml.size() || (xml[i] != '"' && xml[i] != '\'')) {
          return Status::Corruption("XML: unquoted attribute value");
        }
        size_t close = xml.find(xml[i], i + 1);
        if (close == std::string_view::npos)
          return Status::Corruption("XML: unterminated attribute");
        i = close + 1;
      }
      XmlElement element;
      element.name = std::string(LocalName(name));
      if (self_closing) {
        if (stack.empty()) {
          root = std::move(element);
          have_root = true;
        } else {
          stack.back().children.push_back(std::move(element));
        }
      } else {
        if (stack.size() >= kMaxDepth) return Status::Corruption("XML: nested too deeply");
        stack.push_back(std::move(element));
        raw_names.emplace_back(name);
      }
      pos = i;
    }
  }
  if (!stack.empty())
    return Status::Corruption("XML: element '" + raw_names.back() + "' not closed");
  if (!have_root) return Status::Corruption("XML: no root element");
  return root;
}

std::string XmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out.append("&amp;");
        break;
      case '<':
        out.append("&lt;");
        break;
      case '>':
        out.append("&gt;");
        break;
      case '"':
        out.append("&quot;");
        break;
      case '\'':
        out.append("&apos;");
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

}  // namespace skade::io
