"""The WebHDFS test server (tests/tools/webhdfs_server.py) speaks the REST API as its document
describes it: the client tests trust it, so it is checked here with plain HTTP requests, each
against an example or a rule of hadoop-hdfs WebHDFS.md."""
import http.client
import json
import sys
import urllib.parse
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from tool_servers import WebHdfsServer  # noqa: E402


@pytest.fixture(scope="module")
def hdfs():
    with WebHdfsServer(datanodes=3, replication=2, block_size=10,
                       hostnames=["dn-a", "dn-b", "dn-c"], deny_users=["mallory"],
                       lifetime=300) as server:
        yield server


def call(port, method, path, body=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request(method, path, body=body)
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response, data


def nn(hdfs, method, path, op, **params):
    query = urllib.parse.urlencode({"op": op, "user.name": "alice", **params})
    return call(hdfs.namenode_port, method, f"/webhdfs/v1{path}?{query}")


def follow(location, method, body=None):
    url = urllib.parse.urlsplit(location)
    return call(url.port, method, f"{url.path}?{url.query}", body)


def create(hdfs, path, data, **params):
    response, _ = nn(hdfs, "PUT", path, "CREATE", **params)
    assert response.status == 307 and response.getheader("Content-Length") == "0"
    return follow(response.getheader("Location"), "PUT", data)


def remote(data):
    return json.loads(data)["RemoteException"]


def test_create_in_two_steps_then_open_with_offset_and_length(hdfs):
    response, _ = create(hdfs, "/d/one.bin", b"0123456789abcdefghijXYZ")
    assert response.status == 201
    assert response.getheader("Location") == f"hdfs://127.0.0.1:{hdfs.namenode_port}/d/one.bin"
    response, _ = nn(hdfs, "GET", "/d/one.bin", "OPEN", offset=12, length=5)
    assert response.status == 307
    location = response.getheader("Location")
    assert "namenoderpcaddress=" in location and "offset=12" in location
    response, data = follow(location, "GET")
    assert (response.status, data) == (200, b"cdefg")
    assert response.getheader("Content-Type") == "application/octet-stream"


def test_open_redirects_to_a_datanode_holding_the_block(hdfs):
    create(hdfs, "/d/blocks.bin", bytes(35))
    _, data = nn(hdfs, "GET", "/d/blocks.bin", "GETFILEBLOCKLOCATIONS")
    blocks = json.loads(data)["BlockLocations"]["BlockLocation"]
    assert [(b["offset"], b["length"]) for b in blocks] == [(0, 10), (10, 10), (20, 10), (30, 5)]
    assert all(len(b["hosts"]) == 2 and set(b["hosts"]) <= {"dn-a", "dn-b", "dn-c"}
               for b in blocks)
    for block in blocks:
        response, _ = nn(hdfs, "GET", "/d/blocks.bin", "OPEN", offset=block["offset"])
        port = urllib.parse.urlsplit(response.getheader("Location")).port
        assert f"127.0.0.1:{port}" == block["names"][0]
    _, data = nn(hdfs, "GET", "/d/blocks.bin", "GETFILEBLOCKLOCATIONS", offset=12, length=10)
    assert [b["offset"] for b in json.loads(data)["BlockLocations"]["BlockLocation"]] == [10, 20]


def test_noredirect_answers_the_location_as_json(hdfs):
    create(hdfs, "/d/nr.bin", b"abc")
    response, data = nn(hdfs, "GET", "/d/nr.bin", "OPEN", noredirect="true")
    assert response.status == 200
    assert follow(json.loads(data)["Location"], "GET")[1] == b"abc"


def test_create_without_overwrite_refuses_an_existing_file(hdfs):
    create(hdfs, "/d/once.bin", b"first")
    response, data = create(hdfs, "/d/once.bin", b"second", overwrite="false")
    assert response.status == 403
    assert remote(data)["exception"] == "FileAlreadyExistsException"
    assert remote(data)["javaClassName"] == "org.apache.hadoop.fs.FileAlreadyExistsException"
    response, _ = create(hdfs, "/d/once.bin", b"third", overwrite="true")
    assert response.status == 201
    _, data = follow(nn(hdfs, "GET", "/d/once.bin", "OPEN")[0].getheader("Location"), "GET")
    assert data == b"third"


def test_status_listing_and_missing_paths(hdfs):
    create(hdfs, "/ls/b.bin", b"bb")
    create(hdfs, "/ls/a.bin", b"a")
    nn(hdfs, "PUT", "/ls/sub", "MKDIRS")
    _, data = nn(hdfs, "GET", "/ls/b.bin", "GETFILESTATUS")
    status = json.loads(data)["FileStatus"]
    assert (status["type"], status["length"], status["pathSuffix"]) == ("FILE", 2, "")
    assert status["owner"] == "alice"
    _, data = nn(hdfs, "GET", "/ls", "LISTSTATUS")
    entries = json.loads(data)["FileStatuses"]["FileStatus"]
    assert [(e["pathSuffix"], e["type"]) for e in entries] == [
        ("a.bin", "FILE"), ("b.bin", "FILE"), ("sub", "DIRECTORY")]
    _, data = nn(hdfs, "GET", "/ls/a.bin", "LISTSTATUS")  # "List a File"
    assert [e["pathSuffix"] for e in json.loads(data)["FileStatuses"]["FileStatus"]] == [""]
    for op in ("GETFILESTATUS", "LISTSTATUS", "OPEN"):
        response, data = nn(hdfs, "GET", "/ls/missing", op)
        assert response.status == 404 and remote(data)["exception"] == "FileNotFoundException"


def test_open_past_the_end_is_an_ioexception(hdfs):
    create(hdfs, "/d/short.bin", b"12345")
    response, data = nn(hdfs, "GET", "/d/short.bin", "OPEN", offset=5)
    assert response.status == 403 and remote(data)["exception"] == "IOException"


def test_rename_without_options_is_boolean_and_with_options_raises(hdfs):
    create(hdfs, "/r/src", b"s")
    create(hdfs, "/r/dst", b"d")
    _, data = nn(hdfs, "PUT", "/r/src", "RENAME", destination="/r/dst")
    assert json.loads(data) == {"boolean": False}  # FileSystem.rename: destination exists
    response, data = nn(hdfs, "PUT", "/r/src", "RENAME", destination="/r/dst",
                        renameoptions="NONE")
    assert response.status == 403 and remote(data)["exception"] == "FileAlreadyExistsException"
    response, _ = nn(hdfs, "PUT", "/r/src", "RENAME", destination="/r/dst",
                     renameoptions="OVERWRITE")
    assert response.status == 200
    response, data = nn(hdfs, "PUT", "/r/src", "RENAME", destination="/r/x",
                        renameoptions="NONE")
    assert response.status == 404 and remote(data)["exception"] == "FileNotFoundException"
    _, data = nn(hdfs, "PUT", "/r/dst", "RENAME", destination="/r/moved")
    assert json.loads(data) == {"boolean": True}


def test_delete_mkdirs_and_append(hdfs):
    nn(hdfs, "PUT", "/del/a/b", "MKDIRS")
    create(hdfs, "/del/a/b/f", b"x")
    response, data = nn(hdfs, "DELETE", "/del/a", "DELETE")
    assert response.status == 403
    assert remote(data)["exception"] == "PathIsNotEmptyDirectoryException"
    assert json.loads(nn(hdfs, "DELETE", "/del/a", "DELETE", recursive="true")[1]) == \
        {"boolean": True}
    assert json.loads(nn(hdfs, "DELETE", "/del/a", "DELETE")[1]) == {"boolean": False}
    create(hdfs, "/del/f", b"12")
    response, data = nn(hdfs, "PUT", "/del/f/sub", "MKDIRS")
    assert response.status == 403
    response, _ = nn(hdfs, "POST", "/del/f", "APPEND")
    assert response.status == 307
    assert follow(response.getheader("Location"), "POST", b"345")[0].status == 200
    assert json.loads(nn(hdfs, "GET", "/del/f", "GETFILESTATUS")[1])["FileStatus"]["length"] == 5


def test_errors_as_hdfs_returns_them(hdfs):
    response, data = nn(hdfs, "GET", "/x", "NOSUCHOP")
    assert response.status == 400 and remote(data)["exception"] == "IllegalArgumentException"
    response, data = call(hdfs.namenode_port, "GET", "/webhdfs/v1/a/../b?op=GETFILESTATUS")
    assert response.status == 400
    response, data = call(hdfs.namenode_port, "PUT",
                          "/webhdfs/v1/m?op=MKDIRS&user.name=mallory")
    assert response.status == 403 and remote(data)["exception"] == "AccessControlException"
    response, data = call(hdfs.datanode_ports[0], "GET", "/webhdfs/v1/d/one.bin?op=OPEN")
    assert response.status == 400 and "namenoderpcaddress" in remote(data)["message"]


def test_legacy_namenode_has_only_get_block_locations():
    with WebHdfsServer(datanodes=2, replication=2, block_size=4, hostnames=["x", "y"],
                       legacy_block_locations=True, lifetime=120) as old:
        create(old, "/f", b"123456")
        response, data = nn(old, "GET", "/f", "GETFILEBLOCKLOCATIONS")
        assert response.status == 400 and "GetOpParam.Op.GETFILEBLOCKLOCATIONS" in \
            remote(data)["message"]
        _, data = nn(old, "GET", "/f", "GET_BLOCK_LOCATIONS")
        blocks = json.loads(data)["LocatedBlocks"]["locatedBlocks"]
        assert [(b["startOffset"], b["block"]["numBytes"]) for b in blocks] == [(0, 4), (4, 2)]
        assert {d["hostName"] for d in blocks[0]["locations"]} == {"x", "y"}
