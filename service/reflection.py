"""gRPC server reflection, both versions: ``grpc.reflection.v1`` and ``grpc.reflection.v1alpha``.

grpcio-reflection implements only v1alpha. The v1 protocol is the same one published under
another package: the same messages with the same fields and numbers, so the same bytes on the
wire. One servicer therefore answers both services: v1 calls are decoded and encoded with the
v1alpha message classes, and a copy of reflection.proto under package ``grpc.reflection.v1``
joins the descriptor pool, so that reflection lists and describes the v1 service as well.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool
from grpc_reflection.v1alpha import reflection, reflection_pb2, reflection_pb2_grpc

V1_SERVICE = "grpc.reflection.v1.ServerReflection"
V1ALPHA_SERVICE: str = reflection.SERVICE_NAME
_V1_FILE = "grpc/reflection/v1/reflection.proto"


def _v1_file() -> descriptor_pb2.FileDescriptorProto:
    """v1alpha's reflection.proto, moved to package grpc.reflection.v1."""
    fd = descriptor_pb2.FileDescriptorProto()
    reflection_pb2.DESCRIPTOR.CopyToProto(fd)
    old, new = f".{fd.package}.", ".grpc.reflection.v1."
    fd.name = _V1_FILE
    fd.package = "grpc.reflection.v1"
    fd.ClearField("options")  # v1alpha's java/objc/C# package names
    for msg in fd.message_type:
        for field in msg.field:
            if field.type_name.startswith(old):
                field.type_name = new + field.type_name[len(old) :]
    for service in fd.service:
        for method in service.method:
            method.input_type = new + method.input_type[len(old) :]
            method.output_type = new + method.output_type[len(old) :]
    return fd


def enable_server_reflection(service_names: Iterable[str], server: grpc.aio.Server) -> None:
    """Serve reflection v1 and v1alpha for ``service_names`` (and for both reflection
    services) from the default descriptor pool."""
    pool = descriptor_pool.Default()
    try:
        pool.FindFileByName(_V1_FILE)
    except KeyError:
        pool.AddSerializedFile(_v1_file().SerializeToString())
    names = (*service_names, V1_SERVICE, V1ALPHA_SERVICE)
    servicer: Any = reflection.aio.ReflectionServicer(names, pool=pool)  # type: ignore[attr-defined]
    reflection_pb2_grpc.add_ServerReflectionServicer_to_server(servicer, server)
    v1 = grpc.method_handlers_generic_handler(
        V1_SERVICE,
        {
            "ServerReflectionInfo": grpc.stream_stream_rpc_method_handler(
                servicer.ServerReflectionInfo,
                request_deserializer=reflection_pb2.ServerReflectionRequest.FromString,
                response_serializer=reflection_pb2.ServerReflectionResponse.SerializeToString,
            )
        },
    )
    server.add_generic_rpc_handlers((v1,))
