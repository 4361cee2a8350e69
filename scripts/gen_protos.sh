#!/usr/bin/env bash
# Regenerate lancelot/format/pb/*_pb2.py(i) from every lancelot/format/protos/*.proto.
#
# The generated modules are committed.  Generated code refuses protobuf runtimes older than the
# protoc that made it, so it is made with the protoc bundled in grpcio-tools $GRPCIO_TOOLS, whose
# gencode is protobuf 6.31.1: the lower bound of "protobuf" in pyproject.toml (runtimes 6.31.1 up
# to 7.x load it; tests/cli/test_packaging.py checks the two agree).  The tool lives in its own
# throwaway virtualenv (.venv-protoc), so the project's venvs keep the newest protobuf.
set -euo pipefail
cd "$(dirname "$0")/.."
GRPCIO_TOOLS=1.74.0
PY=${PY:-python3}
venv=.venv-protoc
if ! "$venv/bin/python" -c "import grpc_tools, importlib.metadata as m; \
assert m.version('grpcio-tools') == '$GRPCIO_TOOLS'" 2>/dev/null; then
  rm -rf "$venv"
  "$PY" -m venv "$venv"
  "$venv/bin/python" -m pip install -q "grpcio-tools==$GRPCIO_TOOLS"
fi
src=lancelot/format/protos
out=lancelot/format/pb
"$venv/bin/python" -m grpc_tools.protoc -I "$src" --python_out="$out" --pyi_out="$out" "$src"/*.proto
# protos importing each other (table.proto imports file.proto): make those imports package-relative
sed -i -E 's/^import ([a-z0-9_]+_pb2) as /from . import \1 as /' "$out"/*_pb2.py "$out"/*_pb2.pyi
grep -H "Protobuf Python Version" "$out"/*_pb2.py
