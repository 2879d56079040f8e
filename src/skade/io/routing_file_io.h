// A FileIO that sends each call to the local file system or to an object store by the scheme of
// its location, so one FileIO serves tables whose metadata lives on disk and data on S3 (or the
// other way round).
#pragma once

#include <memory>

#include "skade/io/file_io.h"

namespace skade::io {

// Routes by LocationScheme (location.h): s3://, s3a://, s3n:// go to `s3`; plain paths and
// file: to `local`. Another scheme is kInvalidArgument naming it; an object-store location
// with `s3` null is kInvalidArgument ("no object store configured"), and so is a local one with
// `local` null. Thread-safe (both parts are).
std::unique_ptr<FileIO> MakeRoutingFileIO(std::unique_ptr<FileIO> local,
                                          std::unique_ptr<FileIO> s3);

// The FileIO of skade's front ends (CLI, C API): local files, and s3:// (s3a, s3n) through
// S3FileIO configured by S3OptionsFromEnvironment (AWS_* variables, ~/.aws profiles) and by the
// settings catalogs vend (MakeVendedS3FileIO). When the environment's configuration is broken,
// object-store locations without vended settings fail with its error; local files still work.
std::unique_ptr<FileIO> MakeEnvironmentFileIO();

}  // namespace skade::io
