"""Writing files into a folder: the one helper of every command that writes files (`replay --out`, `replay
--evidence`, `publish`), so none of them writes outside its folder or through a symbolic link.

The folder is opened once (it may itself be reached through a link: the user named it). Every path below it is
a relative path of plain names (no `..`, no empty or `.` segment, no backslash or NUL), walked one folder at a
time relative to its parent's descriptor with O_NOFOLLOW (openat), so a symbolic link inside the folder, there
before the run or put there during it, is refused rather than followed. A file is written to a temporary name
created with O_EXCL (never through a link) and renamed over its target, so a reader sees the old bytes or the
new ones, never a part. `create_new` is the one way a file is made, for `keygen`'s keys too.

Standard library only; it never reads the store and never prints. Refusals are InputError (exit 2).
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from ledger.core.errors import InputError

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
SQLITE_COMPANIONS = ("-journal", "-wal", "-shm")  # the files SQLite makes beside a database, by its name
HELD = 64  # folders below held open at most: a site of many months or archives stays far from the fd limit
_NEW_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def relative_parts(relative: str, shown: str) -> list[str]:
    """The names of a relative path below a folder (`shown`, as refusals name it).
    Raises: InputError for a path that is not one of plain names inside it."""
    parts = relative.split("/")
    if any(p in ("", ".", "..") or "\\" in p or "\x00" in p for p in parts):
        raise InputError(f"{relative!r}: not a path inside {shown}")
    return parts


class Folder:
    """A folder written file by file, only inside it and never through a symbolic link. `path` is made
    (with its parents) when `create` is set and it is missing. Use as a context manager, or call `close`."""

    def __init__(self, path: str | Path, create: bool = True):
        """Open the folder `path` (made first, with its parents, when `create` is set).
        Raises: InputError when the folder cannot be made or opened, or is not a folder."""
        self.path = Path(path)
        if create:
            try:
                self.path.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise InputError(f"{self.path}: cannot create the output folder: {exc.strerror}") from None
        try:
            self.fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as exc:
            raise _FolderRefusedError(f"{self.path}: " + ("not a folder" if exc.errno == errno.ENOTDIR else
                                                          f"cannot open the folder: {exc.strerror}"),
                                      exc.strerror or str(exc)) from None
        self._folders: dict[str, int] = {"": self.fd}  # open folders below, by relative path: each walked once

    def __enter__(self) -> Folder:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the folder and every folder below it held open."""
        for fd in self._folders.values():
            os.close(fd)
        self._folders = {}

    def forget(self, prefix: str) -> None:
        """Close the folders held open under `prefix` (a relative path ending in `/`): what is held stays
        bounded when a run writes many folders (one per paper)."""
        for name in [name for name in self._folders if name.startswith(prefix) and name]:  # never the folder itself
            os.close(self._folders.pop(name))

    def put(self, relative: str, data: bytes, only_changed: bool = False) -> tuple[bool, os.stat_result]:
        """Write `data` to `relative`, its folders made as needed; with `only_changed`, a file holding these bytes
        already is left alone. Returns whether it was written, and the file's status as it now is.
        Raises: InputError for a path outside the folder, a symbolic link on the way, or a write that fails."""
        *folders, name = relative_parts(relative, str(self.path))
        parent = self._folder(folders, relative)
        try:
            found = self._existing(parent, name, relative)
            if (only_changed and found is not None and stat.S_ISREG(found.st_mode) and found.st_size == len(data)
                    and self._holds(parent, name, data)):  # a regular file only: reading a FIFO would wait forever
                return False, found
            temporary = f".{name}.{os.getpid()}.tmp"
            try:
                create_new(temporary, data, 0o666, dir_fd=parent)
            except FileExistsError:  # left by a run that was killed (its pid reused), or put there: never opened
                _unlink(parent, temporary)
                create_new(temporary, data, 0o666, dir_fd=parent)
            try:
                os.replace(temporary, name, src_dir_fd=parent, dst_dir_fd=parent)
            except OSError:
                _unlink(parent, temporary)
                raise
            return True, os.stat(name, dir_fd=parent, follow_symlinks=False)
        except OSError as exc:
            raise InputError(f"{self.path / relative}: cannot write: {exc.strerror}") from None

    def remove(self, relative: str) -> bool:
        """Remove the file or empty folder `relative`, when it is there; a symbolic link there is removed itself,
        never followed, a folder that is not empty is left, and one on the way that is missing is not made.
        Returns whether it was removed.
        Raises: InputError for a path outside the folder, a symbolic link on the way, or a removal that fails."""
        *folders, name = relative_parts(relative, str(self.path))
        try:
            parent = self._folder(folders, relative, make=False)
        except FileNotFoundError:
            return False
        self.forget(relative.rstrip("/") + "/")  # a folder held open here would be written into after it is gone
        try:
            try:
                os.unlink(name, dir_fd=parent)
            except IsADirectoryError:
                os.rmdir(name, dir_fd=parent)
        except OSError as exc:
            if exc.errno in (errno.ENOENT, errno.ENOTEMPTY):
                return False
            raise InputError(f"{self.path / relative}: cannot remove: {exc.strerror}") from None
        return True

    def path_of(self, relative: str) -> str:
        """The path of `relative` for SQLite, which opens a file and its companions (SQLITE_COMPANIONS) by
        name: its folders made and checked as `put` checks them, and neither the file nor a companion there
        a symbolic link (one planted as `state.sqlite-journal` would otherwise take the journal's writes).
        Raises: InputError as `put` does."""
        *folders, name = relative_parts(relative, str(self.path))
        parent = self._folder(folders, relative)
        self._existing(parent, name, relative)
        for suffix in SQLITE_COMPANIONS:  # recent SQLite opens them with O_NOFOLLOW too; an older one follows
            self._existing(parent, name + suffix, relative, link=relative + suffix)
        return os.path.join(self.path, *folders, name)

    def _folder(self, folders: list[str], relative: str, make: bool = True) -> int:
        """The descriptor of a folder below this one, each step opened without following a link, made if missing
        (FileNotFoundError for a missing one when not `make`)."""
        walked = ""
        fd = self.fd
        for name in folders:
            walked += name + "/"
            held = self._folders.get(walked)
            if held is not None:
                fd = held
                continue
            try:
                try:
                    child = os.open(name, _DIR_FLAGS, dir_fd=fd)
                except FileNotFoundError:
                    if not make:
                        raise
                    try:
                        os.mkdir(name, dir_fd=fd)
                    except FileExistsError:
                        pass  # made meanwhile: opened below, and checked as any other
                    child = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if _is_link(fd, name):
                    raise _link_refusal(relative, walked[:-1], self.path) from None
                if not make and isinstance(exc, FileNotFoundError):
                    raise
                raise InputError(f"{self.path / relative}: cannot write: {exc.strerror}") from None
            if len(self._folders) > HELD:
                self.forget("")
            fd = self._folders[walked] = child
        return fd

    def _existing(self, parent: int, name: str, relative: str, link: str = "") -> os.stat_result | None:
        """The status of `name` in `parent` (None if missing). Raises: InputError if it is a symbolic link
        (`link`: its relative path, when it is not `relative` itself but a file beside it)."""
        try:
            found = os.stat(name, dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            return None
        if stat.S_ISLNK(found.st_mode):
            raise _link_refusal(relative, link or relative, self.path)
        return found

    @staticmethod
    def _holds(parent: int, name: str, data: bytes) -> bool:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=parent)
        with os.fdopen(fd, "rb") as file:
            return file.read(len(data) + 1) == data



def create_new(path: str | Path, data: bytes, mode: int, dir_fd: int | None = None) -> None:
    """Write `data` to a file `path` (relative to the folder `dir_fd`, if given) that must not exist yet, made
    with `mode` (less the umask) and never through a symbolic link (O_EXCL | O_NOFOLLOW). A file this call
    made and could not fill is removed: no half-written file is left (a key, or a page renamed into place).
    Raises: FileExistsError when something is there already, a symbolic link too; OSError when it cannot be
    made or written (the caller names the file: these are raised as the system gives them)."""
    fd = os.open(path, _NEW_FLAGS, mode, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
    except OSError:
        _unlink(dir_fd, os.fspath(path))
        raise


def write_file(path: str | Path, data: bytes) -> None:
    """Write one file the user named (`replay --out FILE`, `--evidence FILE`) as `Folder.put` writes one: in
    its folder, which must exist, by a rename, and never through a symbolic link.
    Raises: InputError naming the file."""
    path = Path(path)
    if path.name in ("", ".", ".."):
        raise InputError(f"{path}: cannot write: not a file name")
    try:
        folder = Folder(path.parent, create=False)
    except _FolderRefusedError as exc:
        raise InputError(f"{path}: cannot write: {exc.reason}") from None
    with folder:
        try:
            folder.put(path.name, data)
        except _LinkRefusedError:
            raise InputError(f"{path}: a symbolic link; refusing to write through it") from None


class _LinkRefusedError(InputError):
    """A symbolic link where a file or folder is to be written."""


class _FolderRefusedError(InputError):
    """A folder that cannot be opened; `reason` is what `write_file` says of a file in it."""

    def __init__(self, message: str, reason: str):
        super().__init__(message)
        self.reason = reason


def _is_link(parent: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _link_refusal(relative: str, link: str, folder: Path) -> InputError:
    at = "" if link == relative else f" {folder / link}"
    return _LinkRefusedError(f"{folder / relative}:{at} a symbolic link in {folder}, which could lead outside it; "
                             "refusing to write through it")


def _unlink(parent: int | None, name: str) -> None:
    try:
        os.unlink(name, dir_fd=parent)
    except OSError:
        pass
