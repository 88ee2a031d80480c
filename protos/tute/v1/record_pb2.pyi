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

class RecordActor(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RECORD_ACTOR_UNSPECIFIED: _ClassVar[RecordActor]
    RECORD_ACTOR_PLAYER: _ClassVar[RecordActor]
    RECORD_ACTOR_BOT: _ClassVar[RecordActor]
    RECORD_ACTOR_SERVER: _ClassVar[RecordActor]
RECORD_ACTOR_UNSPECIFIED: RecordActor
RECORD_ACTOR_PLAYER: RecordActor
RECORD_ACTOR_BOT: RecordActor
RECORD_ACTOR_SERVER: RecordActor

class DealReveal(_message.Message):
    __slots__ = ("hand_number", "shuffle_algorithm", "server_seed", "commitment", "client_seeds")
    HAND_NUMBER_FIELD_NUMBER: _ClassVar[int]
    SHUFFLE_ALGORITHM_FIELD_NUMBER: _ClassVar[int]
    SERVER_SEED_FIELD_NUMBER: _ClassVar[int]
    COMMITMENT_FIELD_NUMBER: _ClassVar[int]
    CLIENT_SEEDS_FIELD_NUMBER: _ClassVar[int]
    hand_number: int
    shuffle_algorithm: str
    server_seed: str
    commitment: str
    client_seeds: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, hand_number: _Optional[int] = ..., shuffle_algorithm: _Optional[str] = ..., server_seed: _Optional[str] = ..., commitment: _Optional[str] = ..., client_seeds: _Optional[_Iterable[str]] = ...) -> None: ...

class RecordSeat(_message.Message):
    __slots__ = ("index", "display_name", "bot", "bot_level", "player_id")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    BOT_FIELD_NUMBER: _ClassVar[int]
    BOT_LEVEL_FIELD_NUMBER: _ClassVar[int]
    PLAYER_ID_FIELD_NUMBER: _ClassVar[int]
    index: int
    display_name: str
    bot: bool
    bot_level: str
    player_id: str
    def __init__(self, index: _Optional[int] = ..., display_name: _Optional[str] = ..., bot: _Optional[bool] = ..., bot_level: _Optional[str] = ..., player_id: _Optional[str] = ...) -> None: ...

class RecordHand(_message.Message):
    __slots__ = ("hand_number", "commitment", "server_seed", "client_seeds", "pack")
    HAND_NUMBER_FIELD_NUMBER: _ClassVar[int]
    COMMITMENT_FIELD_NUMBER: _ClassVar[int]
    SERVER_SEED_FIELD_NUMBER: _ClassVar[int]
    CLIENT_SEEDS_FIELD_NUMBER: _ClassVar[int]
    PACK_FIELD_NUMBER: _ClassVar[int]
    hand_number: int
    commitment: str
    server_seed: str
    client_seeds: _containers.RepeatedScalarFieldContainer[str]
    pack: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, hand_number: _Optional[int] = ..., commitment: _Optional[str] = ..., server_seed: _Optional[str] = ..., client_seeds: _Optional[_Iterable[str]] = ..., pack: _Optional[_Iterable[str]] = ...) -> None: ...

class RecordAction(_message.Message):
    __slots__ = ("seat", "action", "offset_ms", "by", "timed_out")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    OFFSET_MS_FIELD_NUMBER: _ClassVar[int]
    BY_FIELD_NUMBER: _ClassVar[int]
    TIMED_OUT_FIELD_NUMBER: _ClassVar[int]
    seat: int
    action: str
    offset_ms: int
    by: RecordActor
    timed_out: bool
    def __init__(self, seat: _Optional[int] = ..., action: _Optional[str] = ..., offset_ms: _Optional[int] = ..., by: _Optional[_Union[RecordActor, str]] = ..., timed_out: _Optional[bool] = ...) -> None: ...

class RecordHandOutcome(_message.Message):
    __slots__ = ("hand_number", "totals", "winner_side", "capote", "tute_seat")
    HAND_NUMBER_FIELD_NUMBER: _ClassVar[int]
    TOTALS_FIELD_NUMBER: _ClassVar[int]
    WINNER_SIDE_FIELD_NUMBER: _ClassVar[int]
    CAPOTE_FIELD_NUMBER: _ClassVar[int]
    TUTE_SEAT_FIELD_NUMBER: _ClassVar[int]
    hand_number: int
    totals: _containers.RepeatedScalarFieldContainer[int]
    winner_side: int
    capote: bool
    tute_seat: int
    def __init__(self, hand_number: _Optional[int] = ..., totals: _Optional[_Iterable[int]] = ..., winner_side: _Optional[int] = ..., capote: _Optional[bool] = ..., tute_seat: _Optional[int] = ...) -> None: ...

class RecordResults(_message.Message):
    __slots__ = ("hands", "winner_sides", "reason")
    HANDS_FIELD_NUMBER: _ClassVar[int]
    WINNER_SIDES_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    hands: _containers.RepeatedCompositeFieldContainer[RecordHandOutcome]
    winner_sides: _containers.RepeatedScalarFieldContainer[int]
    reason: str
    def __init__(self, hands: _Optional[_Iterable[_Union[RecordHandOutcome, _Mapping]]] = ..., winner_sides: _Optional[_Iterable[int]] = ..., reason: _Optional[str] = ...) -> None: ...

class MatchRecord(_message.Message):
    __slots__ = ("format", "shuffle_algorithm", "engine_version", "table_id", "started_at", "rules", "first_dealer", "seats", "hands", "actions", "results")
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    SHUFFLE_ALGORITHM_FIELD_NUMBER: _ClassVar[int]
    ENGINE_VERSION_FIELD_NUMBER: _ClassVar[int]
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    RULES_FIELD_NUMBER: _ClassVar[int]
    FIRST_DEALER_FIELD_NUMBER: _ClassVar[int]
    SEATS_FIELD_NUMBER: _ClassVar[int]
    HANDS_FIELD_NUMBER: _ClassVar[int]
    ACTIONS_FIELD_NUMBER: _ClassVar[int]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    format: str
    shuffle_algorithm: str
    engine_version: str
    table_id: str
    started_at: _timestamp_pb2.Timestamp
    rules: _rules_pb2.Rules
    first_dealer: int
    seats: _containers.RepeatedCompositeFieldContainer[RecordSeat]
    hands: _containers.RepeatedCompositeFieldContainer[RecordHand]
    actions: _containers.RepeatedCompositeFieldContainer[RecordAction]
    results: RecordResults
    def __init__(self, format: _Optional[str] = ..., shuffle_algorithm: _Optional[str] = ..., engine_version: _Optional[str] = ..., table_id: _Optional[str] = ..., started_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., rules: _Optional[_Union[_rules_pb2.Rules, _Mapping]] = ..., first_dealer: _Optional[int] = ..., seats: _Optional[_Iterable[_Union[RecordSeat, _Mapping]]] = ..., hands: _Optional[_Iterable[_Union[RecordHand, _Mapping]]] = ..., actions: _Optional[_Iterable[_Union[RecordAction, _Mapping]]] = ..., results: _Optional[_Union[RecordResults, _Mapping]] = ...) -> None: ...
