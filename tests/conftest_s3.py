"""An S3 endpoint on localhost for the tests: moto's server mode on 127.0.0.1, a free port.

``s3_server`` (session) starts one ``ThreadedMotoServer``; ``s3_dataset`` gives each test a
fresh bucket and the storage options lancelot (s3fs names) and pylance (object_store names)
need to reach it.  moto honours conditional puts (``If-None-Match: *``), so commit races are
real on this endpoint.  Import the fixtures from here in a test module.
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


@pytest.fixture(scope="session")
def s3_server():
    from moto.server import ThreadedMotoServer

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
