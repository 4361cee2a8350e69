"""An S3 endpoint on localhost for the tests: moto's server mode on 127.0.0.1, a free port.

``s3_server`` (session) starts one ``ThreadedMotoServer``; ``s3_dataset`` gives each test a
fresh bucket and the storage options lancelot (s3fs names) and pylance (object_store names)
need to reach it.  moto honours conditional puts (``If-None-Match: *``), so commit races are
real on this endpoint; its check and write are two steps, though, so the fixture makes each PUT
atomic (``_atomic_puts``), as S3 is, or two racing commits could both "create" a manifest.
The fixtures reach every test through tests/conftest.py's ``pytest_plugins``; tests import only
the helpers (``DropReplyProxy``...) from here.
"""

from __future__ import annotations

import logging
import socket
import uuid
from dataclasses import dataclass

import pytest

KEY, SECRET, REGION = "testing", "testing", "us-east-1"


@dataclass
class S3Endpoint:
    url: str

    def lancelot_options(self) -> dict:
        """What lancelot takes (s3fs's names)."""
        return {"endpoint_url": self.url, "key": KEY, "secret": SECRET, "client_kwargs": {"region_name": REGION}}

    def pylance_options(self) -> dict:
        """What pylance takes (object_store's names); lancelot takes these too."""
        return {
            "aws_endpoint": self.url,
            "allow_http": "true",
            "aws_region": REGION,
            "aws_access_key_id": KEY,
            "aws_secret_access_key": SECRET,
        }

    def new_bucket(self) -> str:
        import boto3

        name = f"lancelot-{uuid.uuid4().hex[:12]}"
        boto3.client(
            "s3", endpoint_url=self.url, aws_access_key_id=KEY, aws_secret_access_key=SECRET, region_name=REGION
        ).create_bucket(Bucket=name)
        return name


@dataclass
class S3Dataset:
    endpoint: S3Endpoint
    bucket: str

    @property
    def uri(self) -> str:
        return f"s3://{self.bucket}/ds"

    def lancelot_options(self) -> dict:
        return self.endpoint.lancelot_options()

    def pylance_options(self) -> dict:
        return self.endpoint.pylance_options()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _atomic_puts() -> None:
    """Serialise moto's PUT handler: S3 checks ``If-None-Match: *`` and writes in one step, moto in two.

    Without this, two writers committing the same version at once could both succeed (the second
    overwriting the first's manifest): a lost commit that S3 would never allow.  A CI run of
    test_concurrency_s3 once lost a pylance append while every writer reported success, which this
    window explains (both libraries send ``If-None-Match: *`` for manifests).  The server runs in
    this process, so a lock around the handler is enough."""
    import functools
    import threading

    from moto.s3.responses import S3Response

    put = S3Response.put_object
    if getattr(put, "_atomic", False):
        return
    lock = threading.Lock()

    @functools.wraps(put)
    def atomic(self, *args, **kwargs):
        with lock:
            return put(self, *args, **kwargs)

    atomic._atomic = True  # type: ignore[attr-defined]
    S3Response.put_object = atomic


@pytest.fixture(scope="session")
def s3_server():
    from moto.server import ThreadedMotoServer

    _atomic_puts()
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield S3Endpoint(f"http://127.0.0.1:{port}")
    finally:
        server.stop()


@pytest.fixture
def s3_dataset(s3_server) -> S3Dataset:
    """A fresh bucket on the local S3 endpoint; ``.uri`` is a dataset URI inside it."""
    return S3Dataset(s3_server, s3_server.new_bucket())


class DropReplyProxy:
    """An HTTP proxy on 127.0.0.1 in front of the S3 endpoint that can lose replies.

    Every request is forwarded to the endpoint; for the first ``drops`` requests that ``lose``
    selects (method, path, headers), each to another path, the endpoint's reply is read and then
    thrown away: the client's connection is closed without an answer, as when a reply is lost on
    the network after the request took effect.  The client (s3fs / botocore) then retries the request by itself.
    ``.lost`` lists the (method, path, status) of the replies it dropped; ``.seen`` every request."""

    def __init__(self, upstream: str, lose, drops: int = 1) -> None:
        import http.client
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
        from urllib.parse import urlsplit

        up = urlsplit(upstream)
        self.lose, self.drops = lose, drops
        self.lost: list[tuple[str, str, int]] = []
        self.seen: list[tuple[str, str]] = []
        lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            timeout = 30

            def log_message(self, *args) -> None:  # quiet
                pass

            def _body(self) -> bytes:
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    out = b""
                    while True:
                        size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                        if size == 0:
                            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                                pass
                            return out
                        out += self.rfile.read(size)
                        self.rfile.readline()
                return self.rfile.read(int(self.headers.get("Content-Length") or 0))

            def _forward(self) -> None:
                body = self._body()
                hop = ("transfer-encoding", "connection")
                headers = {k: v for k, v in self.headers.items() if k.lower() not in hop}
                if body or self.command in ("PUT", "POST"):
                    headers["Content-Length"] = str(len(body))
                conn = http.client.HTTPConnection(up.hostname, up.port, timeout=30)
                try:
                    conn.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
                    for k, v in headers.items():
                        conn.putheader(k, v)
                    conn.endheaders(body)
                    resp = conn.getresponse()
                    data = resp.read()
                finally:
                    conn.close()
                with lock:
                    proxy.seen.append((self.command, self.path))
                    drop = (
                        len(proxy.lost) < proxy.drops
                        and all(p != self.path for _, p, _ in proxy.lost)  # a retry is answered
                        and proxy.lose(self.command, self.path, self.headers)
                    )
                    if drop:
                        proxy.lost.append((self.command, self.path, resp.status))
                if drop:
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                self.send_response_only(resp.status, resp.reason)
                for k, v in resp.getheaders():
                    if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(k, v)
                length = resp.getheader("Content-Length") if self.command == "HEAD" else str(len(data))
                if length is not None:
                    self.send_header("Content-Length", length)
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def lose_manifest_create(method: str, path: str, headers) -> bool:
    """The conditional PUT (If-None-Match) of a manifest under ``_versions/``."""
    return method == "PUT" and "/_versions/" in path and "If-None-Match" in headers
