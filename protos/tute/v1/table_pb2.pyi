import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from tute.v1 import rules_pb2 as _rules_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class TableStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TABLE_STATUS_UNSPECIFIED: _ClassVar[TableStatus]
    TABLE_STATUS_WAITING: _ClassVar[TableStatus]
    TABLE_STATUS_PLAYING: _ClassVar[TableStatus]
    TABLE_STATUS_FINISHED: _ClassVar[TableStatus]

class Visibility(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    VISIBILITY_UNSPECIFIED: _ClassVar[Visibility]
    VISIBILITY_PUBLIC: _ClassVar[Visibility]
    VISIBILITY_PRIVATE: _ClassVar[Visibility]

class OccupantKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    OCCUPANT_KIND_UNSPECIFIED: _ClassVar[OccupantKind]
    OCCUPANT_KIND_EMPTY: _ClassVar[OccupantKind]
    OCCUPANT_KIND_HUMAN: _ClassVar[OccupantKind]
    OCCUPANT_KIND_BOT: _ClassVar[OccupantKind]

class TurnKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TURN_KIND_UNSPECIFIED: _ClassVar[TurnKind]
    TURN_KIND_LEAD: _ClassVar[TurnKind]
    TURN_KIND_FOLLOW: _ClassVar[TurnKind]
TABLE_STATUS_UNSPECIFIED: TableStatus
TABLE_STATUS_WAITING: TableStatus
TABLE_STATUS_PLAYING: TableStatus
TABLE_STATUS_FINISHED: TableStatus
VISIBILITY_UNSPECIFIED: Visibility
VISIBILITY_PUBLIC: Visibility
VISIBILITY_PRIVATE: Visibility
OCCUPANT_KIND_UNSPECIFIED: OccupantKind
OCCUPANT_KIND_EMPTY: OccupantKind
OCCUPANT_KIND_HUMAN: OccupantKind
OCCUPANT_KIND_BOT: OccupantKind
TURN_KIND_UNSPECIFIED: TurnKind
TURN_KIND_LEAD: TurnKind
TURN_KIND_FOLLOW: TurnKind

class Seat(_message.Message):
    __slots__ = ("index", "side", "occupant", "display_name", "bot_level", "connected", "player_id")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    SIDE_FIELD_NUMBER: _ClassVar[int]
    OCCUPANT_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    BOT_LEVEL_FIELD_NUMBER: _ClassVar[int]
    CONNECTED_FIELD_NUMBER: _ClassVar[int]
    PLAYER_ID_FIELD_NUMBER: _ClassVar[int]
    index: int
    side: int
    occupant: OccupantKind
    display_name: str
    bot_level: str
    connected: bool
    player_id: str
    def __init__(self, index: _Optional[int] = ..., side: _Optional[int] = ..., occupant: _Optional[_Union[OccupantKind, str]] = ..., display_name: _Optional[str] = ..., bot_level: _Optional[str] = ..., connected: _Optional[bool] = ..., player_id: _Optional[str] = ...) -> None: ...

class Table(_message.Message):
    __slots__ = ("table_id", "rules", "visibility", "status", "seats", "free_seats", "create_time", "version")
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    RULES_FIELD_NUMBER: _ClassVar[int]
    VISIBILITY_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    SEATS_FIELD_NUMBER: _ClassVar[int]
    FREE_SEATS_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    table_id: str
    rules: _rules_pb2.Rules
    visibility: Visibility
    status: TableStatus
    seats: _containers.RepeatedCompositeFieldContainer[Seat]
    free_seats: int
    create_time: _timestamp_pb2.Timestamp
    version: int
    def __init__(self, table_id: _Optional[str] = ..., rules: _Optional[_Union[_rules_pb2.Rules, _Mapping]] = ..., visibility: _Optional[_Union[Visibility, str]] = ..., status: _Optional[_Union[TableStatus, str]] = ..., seats: _Optional[_Iterable[_Union[Seat, _Mapping]]] = ..., free_seats: _Optional[int] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., version: _Optional[int] = ...) -> None: ...
