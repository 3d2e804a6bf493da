"""The file namespace behind tests/tools/webhdfs_server.py: HDFS semantics over a local
directory, answering with the JSON objects and RemoteExceptions of the WebHDFS REST API
(hadoop-hdfs WebHDFS.md: FileStatus, FileStatuses, boolean, BlockLocations, RemoteException).

Where the REST document is silent, the behaviour follows HDFS's NameNode as documented in its
FileSystem specification: CREATE makes missing parents; a file being created is visible under
its name (HDFS shows files under construction); DELETE of a missing path is `false`, not an
error; RENAME without `renameoptions` is FileSystem.rename (false on failure, moves into an
existing directory), with `renameoptions` it is rename2 (errors, NONE refuses an existing
destination). Blocks are virtual: a file of n bytes has ceil(n / block size) blocks, each
"stored" on `replication` datanodes chosen round-robin from a start that depends on the path.
"""
import os
import shutil
import stat as statmod
import threading
import zlib

DEFAULT_USER = "dr.who"  # HDFS's static web user when `user.name` is absent


class RemoteError(Exception):
    """An HDFS exception as the REST API returns it: HTTP status + RemoteException JSON."""

    CLASSES = {
        "FileNotFoundException": ("java.io", 404),
        "FileAlreadyExistsException": ("org.apache.hadoop.fs", 403),
        "PathIsNotEmptyDirectoryException": ("org.apache.hadoop.fs", 403),
        "ParentNotDirectoryException": ("org.apache.hadoop.fs", 403),
        "AccessControlException": ("org.apache.hadoop.security", 403),
        "IOException": ("java.io", 403),
        "IllegalArgumentException": ("java.lang", 400),
        "UnsupportedOperationException": ("java.lang", 400),
    }

    def __init__(self, exception, message):
        super().__init__(message)
        package, self.status = self.CLASSES[exception]
        self.json = {"RemoteException": {"exception": exception,
                                         "javaClassName": f"{package}.{exception}",
                                         "message": message}}


def not_found(path):
    return RemoteError("FileNotFoundException", f"File does not exist: {path}")


class Namespace:
    """All methods take absolute HDFS paths ("/a/b") and are safe to call from many threads:
    one lock makes each namespace change atomic, as the NameNode's does."""

    def __init__(self, root, datanodes, replication=3, block_size=128 * 1024 * 1024,
                 deny_users=()):
        self.root = os.path.abspath(root)
        self.datanodes = datanodes  # [(hostname, "127.0.0.1:port")]
        self.replication = min(replication, len(datanodes))
        self.block_size = block_size
        self.deny_users = set(deny_users)
        self.owners = {}
        self.lock = threading.Lock()

    # --- paths -----------------------------------------------------------------------------
    def local(self, path):
        parts = [p for p in path.split("/") if p]
        if not path.startswith("/") or any(p in (".", "..") for p in parts):
            raise RemoteError("IllegalArgumentException", f"Invalid path name {path}")
        return os.path.join(self.root, *parts)

    @staticmethod
    def normalize(path):
        return "/" + "/".join(p for p in path.split("/") if p)

    def check_write(self, user, path):
        if user in self.deny_users:
            raise RemoteError("AccessControlException",
                              f"Permission denied: user={user}, access=WRITE, inode=\"{path}\"")

    # --- status ----------------------------------------------------------------------------
    def file_status(self, path, suffix=""):
        local = self.local(path)
        try:
            st = os.stat(local)
        except FileNotFoundError:
            raise not_found(path)
        is_dir = statmod.S_ISDIR(st.st_mode)
        return {
            "accessTime": 0 if is_dir else int(st.st_atime * 1000),
            "blockSize": 0 if is_dir else self.block_size,
            "childrenNum": len(os.listdir(local)) if is_dir else 0,
            "fileId": st.st_ino,
            "group": "supergroup",
            "length": 0 if is_dir else st.st_size,
            "modificationTime": int(st.st_mtime * 1000),
            "owner": self.owners.get(self.normalize(path), "hdfs"),
            "pathSuffix": suffix,
            "permission": "755" if is_dir else "644",
            "replication": 0 if is_dir else self.replication,
            "storagePolicy": 0,
            "type": "DIRECTORY" if is_dir else "FILE",
        }

    def get_file_status(self, path):
        return {"FileStatus": self.file_status(path)}

    def list_status(self, path):
        local = self.local(path)
        if os.path.isfile(local):
            entries = [self.file_status(path)]
        elif os.path.isdir(local):
            entries = []
            for name in sorted(os.listdir(local), key=lambda n: n.encode()):
                try:
                    entries.append(self.file_status(self.normalize(path + "/" + name), name))
                except RemoteError:
                    pass  # deleted while listing
        else:
            raise RemoteError("FileNotFoundException", f"File {path} does not exist.")
        return {"FileStatuses": {"FileStatus": entries}}

    def home_directory(self, user):
        return {"Path": f"/user/{user}"}

    # --- blocks ----------------------------------------------------------------------------
    def blocks(self, path):
        """[(offset, length, [datanode index...])] of a file."""
        local = self.local(path)
        if not os.path.isfile(local):
            if os.path.isdir(local):
                raise RemoteError("FileNotFoundException", f"Path is not a file: {path}")
            raise not_found(path)
        size = os.path.getsize(local)
        start = zlib.crc32(self.normalize(path).encode()) % len(self.datanodes)
        out = []
        for i, offset in enumerate(range(0, size, self.block_size)):
            nodes = [(start + i + k) % len(self.datanodes) for k in range(self.replication)]
            out.append((offset, min(self.block_size, size - offset), nodes))
        return out

    def block_locations(self, path, offset=0, length=None):
        found = []
        for block_offset, block_length, nodes in self.blocks(path):
            if length is not None and block_offset >= offset + length:
                break
            if block_offset + block_length <= offset:
                continue
            names = [self.datanodes[n][1] for n in nodes]
            found.append({
                "cachedHosts": [], "corrupt": False,
                "hosts": [self.datanodes[n][0] for n in nodes],
                "length": block_length, "names": names, "offset": block_offset,
                "storageTypes": ["DISK"] * len(nodes),
                "topologyPaths": [f"/default-rack/{name}" for name in names]})
        return {"BlockLocations": {"BlockLocation": found}}

    def located_blocks(self, path, offset=0, length=None):
        """GET_BLOCK_LOCATIONS, the private operation older NameNodes have instead (JsonUtil's
        LocatedBlocks: startOffset, isCorrupt, block.numBytes, locations[] of DatanodeInfo)."""
        found = []
        for block in self.block_locations(path, offset, length)["BlockLocations"]["BlockLocation"]:
            found.append({
                "startOffset": block["offset"], "isCorrupt": False,
                "block": {"blockId": 1073741825 + block["offset"] // self.block_size,
                          "blockPoolId": "BP-sluice-test", "generationStamp": 1001,
                          "numBytes": block["length"]},
                "blockToken": {"urlString": "AAAAAA"}, "cachedLocations": [],
                "locations": [{"hostName": host, "ipAddr": name.split(":")[0],
                               "xferPort": int(name.split(":")[1]), "adminState": "NORMAL"}
                              for host, name in zip(block["hosts"], block["names"])],
                "storageTypes": block["storageTypes"]})
        size = os.path.getsize(self.local(path))
        return {"LocatedBlocks": {"fileLength": size, "isUnderConstruction": False,
                                  "isLastBlockComplete": True, "locatedBlocks": found,
                                  "lastLocatedBlock": found[-1] if found else None}}

    def datanode_for_read(self, path, offset):
        """The datanode OPEN redirects to: the first holder of the block at `offset`."""
        blocks = self.blocks(path)
        size = blocks[-1][0] + blocks[-1][1] if blocks else 0
        if offset < 0 or (offset >= size > 0):
            raise RemoteError("IOException", f"Offset={offset} out of the range [0, {size}); "
                              f"OPEN, path={path}")
        for block_offset, block_length, nodes in blocks:
            if block_offset <= offset < block_offset + block_length:
                return nodes[0]
        return zlib.crc32(path.encode()) % len(self.datanodes)

    def datanode_for_write(self, path):
        return zlib.crc32(self.normalize(path).encode()) % len(self.datanodes)

    # --- reads and writes (datanode side) --------------------------------------------------
    def read(self, path, offset, length):
        local = self.local(path)
        if not os.path.isfile(local):
            raise not_found(path)
        with open(local, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if offset > size:
                raise RemoteError("IOException", f"Offset={offset} out of the range [0, {size})")
            f.seek(offset)
            return f.read(size - offset if length is None else length)

    def create(self, path, data, overwrite, user):
        self.check_write(user, path)
        local = self.local(path)
        with self.lock:
            if os.path.isdir(local):
                raise RemoteError("FileAlreadyExistsException",
                                  f"{path} already exists as a directory")
            if os.path.exists(local) and not overwrite:
                raise RemoteError("FileAlreadyExistsException",
                                  f"{path} for client 127.0.0.1 already exists")
            self.make_parents(os.path.dirname(local), path)
            with open(local, "wb") as f:
                f.write(data)
            self.owners[self.normalize(path)] = user

    def append(self, path, data, user):
        self.check_write(user, path)
        local = self.local(path)
        with self.lock:
            if not os.path.isfile(local):
                raise not_found(path)
            with open(local, "ab") as f:
                f.write(data)

    # --- namespace changes -----------------------------------------------------------------
    def make_parents(self, local_dir, path):
        probe = local_dir
        while probe != self.root and not os.path.exists(probe):
            probe = os.path.dirname(probe)
        if not os.path.isdir(probe):
            raise RemoteError("ParentNotDirectoryException",
                              f"{self.to_hdfs(probe)} (is not a directory)")
        os.makedirs(local_dir, exist_ok=True)

    def to_hdfs(self, local):
        rel = os.path.relpath(local, self.root)
        return "/" if rel == "." else "/" + rel.replace(os.sep, "/")

    def mkdirs(self, path, user):
        self.check_write(user, path)
        local = self.local(path)
        with self.lock:
            if os.path.isfile(local):
                raise RemoteError("FileAlreadyExistsException",
                                  f"Path is not a directory: {path}")
            self.make_parents(local, path)
        return {"boolean": True}

    def delete(self, path, recursive, user):
        self.check_write(user, path)
        local = self.local(path)
        if local == self.root:
            return {"boolean": False}  # HDFS refuses to delete the root
        with self.lock:
            if os.path.isdir(local):
                if os.listdir(local) and not recursive:
                    raise RemoteError("PathIsNotEmptyDirectoryException",
                                      f"`{path} is non empty': Directory is not empty")
                shutil.rmtree(local)
            elif os.path.exists(local):
                os.unlink(local)
            else:
                return {"boolean": False}
            self.owners.pop(self.normalize(path), None)
        return {"boolean": True}

    def rename(self, src, dst, options, user):
        """FileSystem.rename (options None) -> {"boolean": ...}; rename2 otherwise -> None."""
        self.check_write(user, src)
        local_src, local_dst = self.local(src), self.local(dst)
        with self.lock:
            if options is None:
                return {"boolean": self.rename_old(local_src, local_dst)}
            self.rename2(src, dst, local_src, local_dst, "OVERWRITE" in options)
            return None

    def rename_old(self, local_src, local_dst):
        if not os.path.exists(local_src) or local_src == self.root:
            return False
        if os.path.isdir(local_dst):
            local_dst = os.path.join(local_dst, os.path.basename(local_src))
        if os.path.exists(local_dst) or not os.path.isdir(os.path.dirname(local_dst)):
            return False
        if (local_dst + os.sep).startswith(local_src + os.sep):
            return False  # into itself
        os.rename(local_src, local_dst)
        return True

    def rename2(self, src, dst, local_src, local_dst, overwrite):
        if not os.path.exists(local_src):
            raise RemoteError("FileNotFoundException", f"rename source {src} is not found.")
        if not os.path.isdir(os.path.dirname(local_dst)):
            raise RemoteError("FileNotFoundException",
                              f"rename destination parent {dst} not found.")
        if (local_dst + os.sep).startswith(local_src + os.sep):
            raise RemoteError("IOException", f"Rename destination {dst} is a directory or "
                              f"file under source {src}")
        if os.path.exists(local_dst):
            if not overwrite:
                raise RemoteError("FileAlreadyExistsException",
                                  f"rename destination {dst} already exists.")
            if os.path.isdir(local_dst) != os.path.isdir(local_src):
                raise RemoteError("IOException", f"Source {src} and destination {dst} must "
                                  "both be directories")
            if os.path.isdir(local_dst) and os.listdir(local_dst):
                raise RemoteError("IOException",
                                  f"rename destination directory is not empty: {dst}")
        os.replace(local_src, local_dst)
        self.owners[self.normalize(dst)] = self.owners.pop(self.normalize(src), "hdfs")

