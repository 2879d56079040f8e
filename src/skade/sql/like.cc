#include "skade/sql/like.h"

namespace skade::sql {

// Greedy matching with one backtrack point (the last '%'), linear in practice.
bool LikeMatch(std::string_view p, std::string_view t) {
  size_t pi = 0, ti = 0, star_p = std::string_view::npos, star_t = 0;
  while (ti < t.size()) {
    if (pi < p.size() && p[pi] == '\\' && pi + 1 < p.size()) {
      if (p[pi + 1] == t[ti]) {
        pi += 2;
        ++ti;
        continue;
      }
    } else if (pi < p.size() && (p[pi] == '_' || (p[pi] != '%' && p[pi] == t[ti]))) {
      ++pi;
      ++ti;
      continue;
    } else if (pi < p.size() && p[pi] == '%') {
      star_p = pi++;
      star_t = ti;
      continue;
    }
    if (star_p == std::string_view::npos) return false;
    pi = star_p + 1;
    ti = ++star_t;
  }
  while (pi < p.size() && p[pi] == '%') ++pi;
  return pi == p.size();
}

}  // namespace skade::sql
