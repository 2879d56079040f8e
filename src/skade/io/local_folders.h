// Local folders whose entries survive a crash. A file is durable only when its bytes, its entry
// in its folder, and that folder's entry in its parent (and so on up) are all on stable storage;
// fsync(2) of a file or a folder promises only the first or the second. So every local writer
// follows one rule: a folder it creates has its entry made durable (its parent fsynced) before
// anything under it is named by a commit. Writers that create folders themselves use
// CreateFoldersDurably; writers whose folders another program creates (DuckDB's partition
// folders) name them to SyncFolderEntries with the files' folders.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "skade/base/status.h"

namespace skade::io {

// Fsyncs one folder; kNotFound when it is absent, kIoError otherwise.
Status SyncFolder(const std::string& folder);

// Creates `folder` and whichever of its parents are missing. The parent of each level this call
// created, or found created by a concurrent writer, is synced (`sync_folder`) before the call
// returns, shallowest level first; when a sync fails, the levels this call made are removed
// again (those still empty), so a later call makes and syncs them anew. An existing `folder`
// costs one stat and syncs nothing. Known limit: a folder another writer has just made, but
// whose entry it has not yet synced, counts as existing, so a commit of this caller may name a
// file under it up to that one fsync early. kIoError naming the level that could not be made
// (e.g. a file in the way) or synced; kNotFound when a parent vanished meanwhile.
Status CreateFoldersDurably(const std::string& folder,
                            const std::function<Status(const std::string&)>& sync_folder = SyncFolder);

// Makes the entries of `locations` (files or folders) in their parents durable: one fsync per
// distinct parent folder. `file:` locations are accepted. kNotFound naming a parent that does
// not exist, kIoError for a failed sync.
Status SyncFolderEntries(const std::vector<std::string>& locations);

// The folders strictly between `root` and each of `files` under it ("root/a=1/b=2/f" gives
// "root/a=1" and "root/a=1/b=2"), each once, parents before children, compared and returned
// lexically normalised: the folders a writer that was given `root` may have created for
// `files`. Files not under `root` add nothing.
std::vector<std::string> FoldersBetween(std::string_view root, const std::vector<std::string>& files);

// Removes the empty folders at and below the local folder `root`, deepest first, `root` too once
// it is empty; what a purge leaves of a table's folder. Never follows a symbolic link (a link
// is an entry: the folder holding it stays), never removes a folder that holds anything (one
// that a concurrent writer fills meanwhile stays; one that vanishes is skipped). Returns how
// many it removed; an absent `root` removes nothing. kIoError naming a folder it could not read.
Result<int64_t> RemoveEmptyFolders(const std::string& root);

}  // namespace skade::io
