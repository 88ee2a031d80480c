"""A protoc plugin for `buf generate` (buf.gen.yaml): grpc_tools' generators, as `make proto`
runs them.

grpcio-tools builds its generators (python, pyi, grpc_python) into its own protoc
(`python -m grpc_tools.protoc`) and ships no protoc-gen-* program, and buf's remote plugins
need the network. This program speaks the plugin protocol for the generator named by its one
argument: it reads buf's CodeGeneratorRequest from stdin, runs grpc_tools' protoc on the same
descriptors (source comments included: grpc_python turns them into docstrings) and answers
with the files protoc wrote. The json_name that buf fills in for every field is cleared where
it is the default one, as protoc leaves it when it reads the .proto files itself, so that the
descriptors embedded in the generated code are the very bytes `make proto` writes.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from google.protobuf import descriptor_pb2
from google.protobuf.compiler import plugin_pb2
from grpc_tools import protoc

GENERATORS = ("python", "pyi", "grpc_python")


def _default_json_name(name: str) -> str:
    parts = name.split("_")
    return parts[0] + "".join(p[:1].upper() + p[1:] for p in parts[1:])


def _clear_default_json_names(messages: list[descriptor_pb2.DescriptorProto]) -> None:
    for msg in messages:
        for field in msg.field:
            if field.json_name == _default_json_name(field.name):
                field.ClearField("json_name")
        _clear_default_json_names(list(msg.nested_type))


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[1] not in GENERATORS:
        print(f"usage: {argv[0]} {{{','.join(GENERATORS)}}}", file=sys.stderr)
        return 2
    generator = argv[1]
    request = plugin_pb2.CodeGeneratorRequest.FromString(sys.stdin.buffer.read())
    response = plugin_pb2.CodeGeneratorResponse(
        supported_features=plugin_pb2.CodeGeneratorResponse.FEATURE_PROTO3_OPTIONAL
    )
    files = descriptor_pb2.FileDescriptorSet(file=request.proto_file)
    for fd in files.file:
        _clear_default_json_names(list(fd.message_type))
    with tempfile.TemporaryDirectory() as tmp:
        descriptors = Path(tmp, "request.binpb")
        descriptors.write_bytes(files.SerializeToString())
        out = Path(tmp, "out")
        out.mkdir()
        target = f"{request.parameter}:{out}" if request.parameter else str(out)
        args = ["protoc", f"--descriptor_set_in={descriptors}", f"--{generator}_out={target}"]
        if protoc.main([*args, *request.file_to_generate]) != 0:
            response.error = f"grpc_tools.protoc --{generator}_out failed (see above)"
        for path in sorted(out.rglob("*")):
            if path.is_file():
                response.file.add(name=path.relative_to(out).as_posix(), content=path.read_text())
    sys.stdout.buffer.write(response.SerializeToString())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
