import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ModeRating(_message.Message):
    __slots__ = ("mode", "rating", "provisional", "games", "wins")
    MODE_FIELD_NUMBER: _ClassVar[int]
    RATING_FIELD_NUMBER: _ClassVar[int]
    PROVISIONAL_FIELD_NUMBER: _ClassVar[int]
    GAMES_FIELD_NUMBER: _ClassVar[int]
    WINS_FIELD_NUMBER: _ClassVar[int]
    mode: str
    rating: int
    provisional: bool
    games: int
    wins: int
    def __init__(self, mode: _Optional[str] = ..., rating: _Optional[int] = ..., provisional: _Optional[bool] = ..., games: _Optional[int] = ..., wins: _Optional[int] = ...) -> None: ...

class MatchSummary(_message.Message):
    __slots__ = ("table_id", "seat", "ranked", "start_time", "end_time")
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    SEAT_FIELD_NUMBER: _ClassVar[int]
    RANKED_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    END_TIME_FIELD_NUMBER: _ClassVar[int]
    table_id: str
    seat: int
    ranked: bool
    start_time: _timestamp_pb2.Timestamp
    end_time: _timestamp_pb2.Timestamp
    def __init__(self, table_id: _Optional[str] = ..., seat: _Optional[int] = ..., ranked: _Optional[bool] = ..., start_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., end_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class Player(_message.Message):
    __slots__ = ("player_id", "display_name", "ratings", "recent_matches")
    PLAYER_ID_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    RATINGS_FIELD_NUMBER: _ClassVar[int]
    RECENT_MATCHES_FIELD_NUMBER: _ClassVar[int]
    player_id: str
    display_name: str
    ratings: _containers.RepeatedCompositeFieldContainer[ModeRating]
    recent_matches: _containers.RepeatedCompositeFieldContainer[MatchSummary]
    def __init__(self, player_id: _Optional[str] = ..., display_name: _Optional[str] = ..., ratings: _Optional[_Iterable[_Union[ModeRating, _Mapping]]] = ..., recent_matches: _Optional[_Iterable[_Union[MatchSummary, _Mapping]]] = ...) -> None: ...

class LeaderboardEntry(_message.Message):
    __slots__ = ("rank", "player_id", "display_name", "rating")
    RANK_FIELD_NUMBER: _ClassVar[int]
    PLAYER_ID_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    RATING_FIELD_NUMBER: _ClassVar[int]
    rank: int
    player_id: str
    display_name: str
    rating: ModeRating
    def __init__(self, rank: _Optional[int] = ..., player_id: _Optional[str] = ..., display_name: _Optional[str] = ..., rating: _Optional[_Union[ModeRating, _Mapping]] = ...) -> None: ...
