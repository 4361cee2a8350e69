"""Storage options for fsspec: pylance's (object_store's) names for S3 mapped to s3fs's.

pylance and lancelot take the same options for the same store (README, "Datasets"): what
object_store calls ``aws_endpoint``, ``aws_access_key_id``, ``aws_region``... s3fs calls
``endpoint_url``, ``key``, ``client_kwargs={"region_name": ...}``.  s3fs's client keeps 10
connections by default, which would cut a reader's round of up to 64 concurrent requests
(io/source.py, FsspecSource) into waves: the pool is sized for a round instead.
"""

from __future__ import annotations

from typing import Any

#: s3fs's connection pool, unless the options size it: one round of FsspecSource.max_concurrency requests
POOL_CONNECTIONS = 64

#: pylance / object_store option names -> s3fs's
_S3_KEYS = {
    "aws_access_key_id": "key",
    "access_key_id": "key",
    "aws_secret_access_key": "secret",
    "secret_access_key": "secret",
    "aws_session_token": "token",
    "session_token": "token",
    "aws_token": "token",
    "aws_endpoint": "endpoint_url",
    "aws_endpoint_url": "endpoint_url",
    "endpoint": "endpoint_url",
    "aws_endpoint_url_s3": "endpoint_url",
}
_S3_REGION_KEYS = ("aws_region", "region", "aws_default_region")
#: pylance options with no s3fs meaning (plain http needs no switch in s3fs)
_S3_DROPPED = {
    "allow_http",
    "aws_allow_http",
    "aws_virtual_hosted_style_request",
    "virtual_hosted_style_request",
    "aws_s3_express",
    "s3_express",
    "conditional_put",
    "aws_conditional_put",
}


def truthy(v: Any) -> bool:
    return v if isinstance(v, bool) else str(v).strip().lower() in ("1", "true", "yes", "on")


def s3_options(options: dict[str, Any] | None) -> dict[str, Any]:
    """Map storage options to s3fs's: pylance-style keys (``aws_endpoint``, ``aws_access_key_id``,
    ``aws_secret_access_key``, ``aws_region``, ``allow_http``...) are translated, s3fs keys pass; the
    client's connection pool holds POOL_CONNECTIONS unless ``config_kwargs`` says otherwise."""
    out: dict[str, Any] = {}
    client_kwargs: dict[str, Any] = {}
    for k, v in (options or {}).items():
        lk = k.lower()
        if lk in _S3_KEYS:
            out[_S3_KEYS[lk]] = v
        elif lk in _S3_REGION_KEYS:
            client_kwargs["region_name"] = v
        elif lk in _S3_DROPPED:
            continue
        elif lk in ("anon", "skip_signature", "aws_skip_signature"):
            out["anon"] = truthy(v)
        elif k == "client_kwargs":
            client_kwargs.update(v)
        else:
            out[k] = v
    if client_kwargs:
        out["client_kwargs"] = client_kwargs
    config = dict(out.get("config_kwargs") or {})
    config.setdefault("max_pool_connections", POOL_CONNECTIONS)
    out["config_kwargs"] = config
    return out


def fsspec_options(url: str, options: dict[str, Any] | None) -> dict[str, Any]:
    """The options fsspec's filesystem for ``url`` takes (S3 URLs: ``s3_options``)."""
    scheme = url.split("://", 1)[0].lower() if "://" in url else "file"
    return s3_options(options) if scheme in ("s3", "s3a") else dict(options or {})
