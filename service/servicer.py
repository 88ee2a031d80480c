"""The gRPC servicer: thin. It reads the seat token from metadata, names the caller for the
per-caller limits (:mod:`service.callers`) and calls the app."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from tute.v1 import service_pb2, service_pb2_grpc

from .app import TuteApp
from .auth import bearer_token
from .callers import CALLER


def _token(context: Any) -> str | None:
    return bearer_token(context.invocation_metadata())


def _caller(app: TuteApp, context: Any) -> None:
    """Who calls, for the per-caller limits (service.callers.CALLER)."""
    CALLER.set(app.callers.caller(context.peer(), context.invocation_metadata()))


class TuteServicer(service_pb2_grpc.TuteServiceServicer):
    def __init__(self, app: TuteApp) -> None:
        self.app = app

    async def CreateTable(
        self, request: service_pb2.CreateTableRequest, context: Any
    ) -> service_pb2.CreateTableResponse:
        _caller(self.app, context)
        return await self.app.create_table(request)

    async def ListTables(
        self, request: service_pb2.ListTablesRequest, context: Any
    ) -> service_pb2.ListTablesResponse:
        return await self.app.list_tables(request)

    async def JoinTable(
        self, request: service_pb2.JoinTableRequest, context: Any
    ) -> service_pb2.JoinTableResponse:
        _caller(self.app, context)
        return await self.app.join_table(request, _token(context))

    async def AddBot(
        self, request: service_pb2.AddBotRequest, context: Any
    ) -> service_pb2.AddBotResponse:
        _caller(self.app, context)
        return await self.app.add_bot(request, _token(context))

    async def LeaveTable(
        self, request: service_pb2.LeaveTableRequest, context: Any
    ) -> service_pb2.LeaveTableResponse:
        return await self.app.leave_table(request, _token(context))

    async def GetTable(
        self, request: service_pb2.GetTableRequest, context: Any
    ) -> service_pb2.GetTableResponse:
        return await self.app.get_table(request, _token(context))

    async def SubmitAction(
        self, request: service_pb2.SubmitActionRequest, context: Any
    ) -> service_pb2.SubmitActionResponse:
        return await self.app.submit_action(request, _token(context))

    async def WatchTable(
        self, request: service_pb2.WatchTableRequest, context: Any
    ) -> AsyncIterator[service_pb2.WatchTableResponse]:
        _caller(self.app, context)
        async for item in self.app.watch_table(request, _token(context)):
            yield item
