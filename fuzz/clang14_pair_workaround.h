// Force-included into every C++ file of the fuzz build (SKADE_FUZZ) when clang is older than
// 16: clang 14 with libstdc++ 12 cannot compile skade/iceberg/avro.h. AvroValue holds a
// std::vector<std::pair<std::string, AvroValue>>, and its inline `Null()` needs AvroValue's
// implicit default constructor inside the class; libstdc++'s C++20 std::pair default
// constructor is `explicit(!__is_implicitly_default_constructible<T2>)`, which clang 14
// evaluates recursively on the still-incomplete pair ("template argument must be a complete
// class"). g++ 12 accepts it. This header makes <utility> define std::pair through
// libstdc++'s pre-concepts (C++17) code path, which declares the same members with SFINAE
// instead of explicit(bool), then restores the feature macro for everything else.
// Remove it once avro.h declares AvroValue's default constructor out of line.
#pragma once

#include <compare>
#include <concepts>
#undef __cpp_lib_concepts
#include <utility>
#define __cpp_lib_concepts 202002L
