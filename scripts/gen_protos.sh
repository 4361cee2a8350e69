#!/usr/bin/env bash
# Regenerate lancelot/format/pb/*_pb2.py from lancelot/format/protos/*.proto.
# Needs grpcio-tools (in the "dev" extra).  The generated modules are committed.
set -euo pipefail
cd "$(dirname "$0")/.."
src=lancelot/format/protos
out=lancelot/format/pb
python -m grpc_tools.protoc -I "$src" --python_out="$out" --pyi_out="$out" "$src"/*.proto
