// The Arrow C Data Interface structs (ArrowSchema, ArrowArray, ArrowArrayStream, as the Arrow
// specification defines them) and RAII owners that call `release` exactly once.
#pragma once

#ifdef __cplusplus
#include <cstdint>
#include <utility>
#else
#include <stdint.h>
#endif

#ifndef ARROW_C_DATA_INTERFACE
#define ARROW_C_DATA_INTERFACE

#define ARROW_FLAG_DICTIONARY_ORDERED 1
#define ARROW_FLAG_NULLABLE 2
#define ARROW_FLAG_MAP_KEYS_SORTED 4

#ifdef __cplusplus
extern "C" {
#endif
struct ArrowSchema {
  const char* format;
  const char* name;
  const char* metadata;
  int64_t flags;
  int64_t n_children;
  struct ArrowSchema** children;
  struct ArrowSchema* dictionary;
  void (*release)(struct ArrowSchema*);
  void* private_data;
};

struct ArrowArray {
  int64_t length;
  int64_t null_count;
  int64_t offset;
  int64_t n_buffers;
  int64_t n_children;
  const void** buffers;
  struct ArrowArray** children;
  struct ArrowArray* dictionary;
  void (*release)(struct ArrowArray*);
  void* private_data;
};
#ifdef __cplusplus
}
#endif
#endif  /* ARROW_C_DATA_INTERFACE */

#ifndef ARROW_C_STREAM_INTERFACE
#define ARROW_C_STREAM_INTERFACE
#ifdef __cplusplus
extern "C" {
#endif
struct ArrowArrayStream {
  int (*get_schema)(struct ArrowArrayStream*, struct ArrowSchema* out);
  int (*get_next)(struct ArrowArrayStream*, struct ArrowArray* out);
  const char* (*get_last_error)(struct ArrowArrayStream*);
  void (*release)(struct ArrowArrayStream*);
  void* private_data;
};
#ifdef __cplusplus
}
#endif
#endif /* ARROW_C_STREAM_INTERFACE */

#ifdef __cplusplus
namespace skade::arrow {

// Owns one C struct and releases it on destruction. Move-only. T is ArrowSchema, ArrowArray
// or ArrowArrayStream.
template <typename T>
class Owned {
 public:
  Owned() { raw_.release = nullptr; }
  // Takes over `raw` (the caller's copy is marked released).
  explicit Owned(T* raw) : raw_(*raw) { raw->release = nullptr; }
  ~Owned() { Reset(); }
  Owned(Owned&& o) noexcept : raw_(o.raw_) { o.raw_.release = nullptr; }
  Owned& operator=(Owned&& o) noexcept {
    if (this != &o) {
      Reset();
      raw_ = o.raw_;
      o.raw_.release = nullptr;
    }
    return *this;
  }
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;

  T* get() { return &raw_; }
  const T* get() const { return &raw_; }
  T* operator->() { return &raw_; }
  const T* operator->() const { return &raw_; }
  bool valid() const { return raw_.release != nullptr; }
  // Moves the struct out to `out` (e.g. to hand it to a consumer), leaving this empty.
  void MoveTo(T* out) {
    *out = raw_;
    raw_.release = nullptr;
  }
  void Reset() {
    if (raw_.release != nullptr) raw_.release(&raw_);
    raw_.release = nullptr;
  }

 private:
  T raw_;
};

using SchemaHandle = Owned<ArrowSchema>;
using ArrayHandle = Owned<ArrowArray>;
using StreamHandle = Owned<ArrowArrayStream>;

}  // namespace skade::arrow
#endif /* __cplusplus */
