"""Server reflection over the wire, in both versions a client may speak: grpc.reflection.v1
(grpcurl's and most tools' first choice) and grpc.reflection.v1alpha."""

from __future__ import annotations

from typing import Any

import grpc
import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from grpc_reflection.v1alpha import reflection_pb2

from service.server import Server

V1 = "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo"
V1ALPHA = "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"
SERVICES = {
    "tute.v1.TuteService",
    "grpc.health.v1.Health",
    "grpc.reflection.v1.ServerReflection",
    "grpc.reflection.v1alpha.ServerReflection",
}


async def ask(channel: grpc.aio.Channel, path: str, request: Any, response_cls: Any) -> Any:
    """One request on a reflection stream, its one answer."""
    call = channel.stream_stream(
        path,
        request_serializer=lambda m: m.SerializeToString(),
        response_deserializer=response_cls.FromString,
    )(iter([request]))
    answers = [a async for a in call]
    assert len(answers) == 1
    return answers[0]


def files_of(response: Any) -> dict[str, descriptor_pb2.FileDescriptorProto]:
    out = {}
    for raw in response.file_descriptor_response.file_descriptor_proto:
        fd = descriptor_pb2.FileDescriptorProto.FromString(raw)
        out[fd.name] = fd
    return out


@pytest.mark.parametrize("path", [V1ALPHA, V1])
async def test_reflection_lists_and_describes_the_service(
    server: Server, channel: grpc.aio.Channel, path: str
) -> None:
    req = reflection_pb2.ServerReflectionRequest
    resp = reflection_pb2.ServerReflectionResponse
    listed = await ask(channel, path, req(list_services=""), resp)
    assert {s.name for s in listed.list_services_response.service} == SERVICES
    described = files_of(
        await ask(channel, path, req(file_containing_symbol="tute.v1.TuteService"), resp)
    )
    service = described["tute/v1/service.proto"]
    assert [s.name for s in service.service] == ["TuteService"]
    assert "WatchTable" in {m.name for m in service.service[0].method}
    missing = await ask(channel, path, req(file_containing_symbol="tute.v1.Nope"), resp)
    assert missing.error_response.error_code == grpc.StatusCode.NOT_FOUND.value[0]


async def test_a_client_built_from_the_v1_proto_lists_the_services(
    server: Server, channel: grpc.aio.Channel
) -> None:
    """The v1 service describes itself as package grpc.reflection.v1, and a client whose
    messages are built from that description (not from v1alpha's) lists the services."""
    v1alpha = reflection_pb2
    described = files_of(
        await ask(
            channel,
            V1,
            v1alpha.ServerReflectionRequest(
                file_containing_symbol="grpc.reflection.v1.ServerReflection"
            ),
            v1alpha.ServerReflectionResponse,
        )
    )
    fd = described["grpc/reflection/v1/reflection.proto"]
    assert fd.package == "grpc.reflection.v1"
    (method,) = fd.service[0].method
    assert (method.name, method.input_type, method.output_type) == (
        "ServerReflectionInfo",
        ".grpc.reflection.v1.ServerReflectionRequest",
        ".grpc.reflection.v1.ServerReflectionResponse",
    )
    assert method.client_streaming and method.server_streaming
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    # a class built at run time from the pool: its fields are unknown to the type checker
    request_cls: Any = message_factory.GetMessageClass(
        pool.FindMessageTypeByName("grpc.reflection.v1.ServerReflectionRequest")
    )
    response_cls = message_factory.GetMessageClass(
        pool.FindMessageTypeByName("grpc.reflection.v1.ServerReflectionResponse")
    )
    listed = await ask(channel, V1, request_cls(list_services=""), response_cls)
    assert {s.name for s in listed.list_services_response.service} == SERVICES
