#include <string>
#include <unordered_map>
#include <vector>

#include "skade/base/json_parse_internal.h"

namespace skade {
namespace {

// Builds the tree from nlohmann's SAX events. Objects up to kLinearMembers members find a
// repeated key by scanning; larger ones keep a hash index of their keys, so every object is
// built in time linear in its members. Containers are held by pointer while open: only the
// innermost open container grows, so no open container moves.
template <typename Json>
class TreeBuilder {
 public:
  using number_integer_t = typename Json::number_integer_t;
  using number_unsigned_t = typename Json::number_unsigned_t;
  using number_float_t = typename Json::number_float_t;
  using string_t = typename Json::string_t;
  using binary_t = typename Json::binary_t;

  explicit TreeBuilder(size_t max_depth) : max_depth_(max_depth) {}

  bool null() { return Put(Json(nullptr)); }
  bool boolean(bool v) { return Put(Json(v)); }
  bool number_integer(number_integer_t v) { return Put(Json(v)); }
  bool number_unsigned(number_unsigned_t v) { return Put(Json(v)); }
  bool number_float(number_float_t v, const string_t&) { return Put(Json(v)); }
  bool string(string_t& v) { return Put(Json(std::move(v))); }
  bool binary(binary_t& v) { return Put(Json::binary(std::move(v))); }

  bool start_object(std::size_t) { return Open(Json::object()); }
  bool start_array(std::size_t) { return Open(Json::array()); }
  bool key(string_t& k) {
    frames_.back().key = std::move(k);
    return true;
  }
  bool end_object() {
    frames_.pop_back();
    return true;
  }
  bool end_array() {
    frames_.pop_back();
    return true;
  }

  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& ex) {
    error_ = "invalid JSON at byte " + std::to_string(position) + ": " + ex.what();
    return false;
  }

  Json& root() { return root_; }
  const std::string& error() const { return error_; }

 private:
  static constexpr size_t kLinearMembers = 16;

  struct Frame {
    Json* node;
    string_t key;                                  // the pending key of an object
    std::unordered_map<string_t, size_t> index;  // member positions, once past kLinearMembers
  };

  bool Open(Json container) {
    if (frames_.size() >= max_depth_) {
      error_ = "JSON nested deeper than " + std::to_string(max_depth_) + " levels";
      return false;
    }
    Json* placed = Place(std::move(container));
    frames_.push_back(Frame{placed, {}, {}});
    return true;
  }

  bool Put(Json value) {
    Place(std::move(value));
    return true;
  }

  // Puts `value` where the parser is: the root, the end of the open array, or the open object's
  // pending key.
  Json* Place(Json value) {
    if (frames_.empty()) {
      root_ = std::move(value);
      return &root_;
    }
    Frame& f = frames_.back();
    if (f.node->is_array()) {
      auto& array = f.node->template get_ref<typename Json::array_t&>();
      array.push_back(std::move(value));
      return &array.back();
    }
    return Insert(f, f.node->template get_ref<typename Json::object_t&>(), std::move(value));
  }

  // nlohmann::json: a std::map, logarithmic either way.
  static Json* Insert(Frame& f, typename nlohmann::json::object_t& object, Json value) {
    Json& slot = object[std::move(f.key)];
    slot = std::move(value);
    return &slot;
  }

  // nlohmann::ordered_json: a vector of members (ordered_map), appended to without its own
  // linear search; a repeated key is found by scanning a small object or by the index.
  static Json* Insert(Frame& f, typename nlohmann::ordered_json::object_t& object, Json value) {
    auto& members = static_cast<typename nlohmann::ordered_json::object_t::Container&>(object);
    if (members.size() < kLinearMembers) {
      for (auto& member : members) {
        if (member.first == f.key) return &(member.second = std::move(value));
      }
    } else {
      if (f.index.empty()) {
        f.index.reserve(4 * kLinearMembers);
        for (size_t i = 0; i < members.size(); ++i) f.index.emplace(members[i].first, i);
      }
      auto [it, inserted] = f.index.try_emplace(f.key, members.size());
      if (!inserted) return &(members[it->second].second = std::move(value));
    }
    members.emplace_back(std::move(f.key), std::move(value));
    return &members.back().second;
  }

  const size_t max_depth_;
  Json root_;
  std::vector<Frame> frames_;
  std::string error_;
};

template <typename Json>
Result<Json> Parse(std::string_view text, std::string_view what, size_t max_depth) {
  TreeBuilder<Json> builder(max_depth);
  bool ok = false;
  try {
    ok = Json::sax_parse(text.begin(), text.end(), &builder, nlohmann::detail::input_format_t::json, true);
  } catch (const std::exception& e) {
    return Status::InvalidArgument(std::string(what) + ": invalid JSON: " + e.what());
  }
  if (!ok) {
    return Status::InvalidArgument(std::string(what) + ": " +
                                   (builder.error().empty() ? std::string("invalid JSON") : builder.error()));
  }
  return std::move(builder.root());
}

}  // namespace

Result<nlohmann::ordered_json> ParseOrderedJson(std::string_view text, std::string_view what, size_t max_depth) {
  return Parse<nlohmann::ordered_json>(text, what, max_depth);
}

Result<nlohmann::json> ParseJson(std::string_view text, std::string_view what, size_t max_depth) {
  return Parse<nlohmann::json>(text, what, max_depth);
}

}  // namespace skade
