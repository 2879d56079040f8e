// Files of this process that nothing but their owner may open: the SQLite catalog's database
// and its -wal, -shm and -journal files. POSIX record locks belong to the process, and closing
// any descriptor of a file drops all of them (fcntl(2)), so one stray open and close of the
// catalog database — a query's read_blob(), a registered "metadata file", a manifest list that
// points there — silently releases the catalog's locks; the next writer in another process
// then re-initialises the shared memory under this one. Every path skade opens for a request,
// a query or a file named inside metadata is checked against this one registry.
#pragma once

#include <string>
#include <string_view>

#include "skade/base/status.h"

namespace skade::io {

// Reserves `path` (a local file, which need not exist yet) for its owner, for the life of the
// process. Thread-safe. Idempotent.
void ReserveFile(std::string_view path);

// Reserves a SQLite database and the files SQLite keeps beside it (-wal, -shm, -journal).
void ReserveSqliteDatabase(std::string_view path);

// Whether `location` is a reserved file: the same file by identity (device and inode, so
// symlinks, hard links, "..", "//" and file: forms are all seen through) or, for a file that
// does not exist yet, the same name after normalisation (of its folder's real path). Object
// store locations are never reserved. Thread-safe; a few stat(2) calls.
bool IsReservedFile(std::string_view location);

// kPermissionDenied naming `what` when `location` is a reserved file, else Ok.
Status CheckNotReserved(std::string_view location, std::string_view what);

}  // namespace skade::io
