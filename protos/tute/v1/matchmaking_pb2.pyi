from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class WatchTicketResponse(_message.Message):
    __slots__ = ("waiting", "matched")
    WAITING_FIELD_NUMBER: _ClassVar[int]
    MATCHED_FIELD_NUMBER: _ClassVar[int]
    waiting: TicketWaiting
    matched: TicketMatched
    def __init__(self, waiting: _Optional[_Union[TicketWaiting, _Mapping]] = ..., matched: _Optional[_Union[TicketMatched, _Mapping]] = ...) -> None: ...

class TicketWaiting(_message.Message):
    __slots__ = ("window", "queued", "waited_s", "bots_in_s")
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    QUEUED_FIELD_NUMBER: _ClassVar[int]
    WAITED_S_FIELD_NUMBER: _ClassVar[int]
    BOTS_IN_S_FIELD_NUMBER: _ClassVar[int]
    window: int
    queued: int
    waited_s: float
    bots_in_s: float
    def __init__(self, window: _Optional[int] = ..., queued: _Optional[int] = ..., waited_s: _Optional[float] = ..., bots_in_s: _Optional[float] = ...) -> None: ...

class TicketMatched(_message.Message):
    __slots__ = ("table_id", "seat", "seat_token", "bot_seats")
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    SEAT_FIELD_NUMBER: _ClassVar[int]
    SEAT_TOKEN_FIELD_NUMBER: _ClassVar[int]
    BOT_SEATS_FIELD_NUMBER: _ClassVar[int]
    table_id: str
    seat: int
    seat_token: str
    bot_seats: int
    def __init__(self, table_id: _Optional[str] = ..., seat: _Optional[int] = ..., seat_token: _Optional[str] = ..., bot_seats: _Optional[int] = ...) -> None: ...
