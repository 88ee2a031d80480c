from tute.v1 import action_pb2 as _action_pb2
from tute.v1 import event_pb2 as _event_pb2
from tute.v1 import matchmaking_pb2 as _matchmaking_pb2
from tute.v1 import player_pb2 as _player_pb2
from tute.v1 import record_pb2 as _record_pb2
from tute.v1 import rules_pb2 as _rules_pb2
from tute.v1 import table_pb2 as _table_pb2
from tute.v1 import view_pb2 as _view_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class CreateTableRequest(_message.Message):
    __slots__ = ("rules", "visibility", "take_seat", "seat", "display_name", "client_seed")
    RULES_FIELD_NUMBER: _ClassVar[int]
    VISIBILITY_FIELD_NUMBER: _ClassVar[int]
    TAKE_SEAT_FIELD_NUMBER: _ClassVar[int]
    SEAT_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    CLIENT_SEED_FIELD_NUMBER: _ClassVar[int]
    rules: _rules_pb2.Rules
    visibility: _table_pb2.Visibility
    take_seat: bool
    seat: int
    display_name: str
    client_seed: str
    def __init__(self, rules: _Optional[_Union[_rules_pb2.Rules, _Mapping]] = ..., visibility: _Optional[_Union[_table_pb2.Visibility, str]] = ..., take_seat: _Optional[bool] = ..., seat: _Optional[int] = ..., display_name: _Optional[str] = ..., client_seed: _Optional[str] = ...) -> None: ...

class CreateTableResponse(_message.Message):
    __slots__ = ("table_id", "table", "invite_code", "seat", "seat_token", "owner_token")
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    TABLE_FIELD_NUMBER: _ClassVar[int]
    INVITE_CODE_FIELD_NUMBER: _ClassVar[int]
    SEAT_FIELD_NUMBER: _ClassVar[int]
    SEAT_TOKEN_FIELD_NUMBER: _ClassVar[int]
    OWNER_TOKEN_FIELD_NUMBER: _ClassVar[int]
    table_id: str
    table: _table_pb2.Table
    invite_code: str
    seat: int
    seat_token: str
    owner_token: str
    def __init__(self, table_id: _Optional[str] = ..., table: _Optional[_Union[_table_pb2.Table, _Mapping]] = ..., invite_code: _Optional[str] = ..., seat: _Optional[int] = ..., seat_token: _Optional[str] = ..., owner_token: _Optional[str] = ...) -> None: ...

class ListTablesRequest(_message.Message):
    __slots__ = ("preset", "players", "page_size", "page_token")
    PRESET_FIELD_NUMBER: _ClassVar[int]
    PLAYERS_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    preset: str
    players: int
    page_size: int
    page_token: str
    def __init__(self, preset: _Optional[str] = ..., players: _Optional[int] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListTablesResponse(_message.Message):
    __slots__ = ("tables", "next_page_token")
    TABLES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    tables: _containers.RepeatedCompositeFieldContainer[_table_pb2.Table]
    next_page_token: str
    def __init__(self, tables: _Optional[_Iterable[_Union[_table_pb2.Table, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class JoinTableRequest(_message.Message):
    __slots__ = ("table_id", "invite_code", "seat", "display_name", "client_seed")
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    INVITE_CODE_FIELD_NUMBER: _ClassVar[int]
    SEAT_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    CLIENT_SEED_FIELD_NUMBER: _ClassVar[int]
    table_id: str
    invite_code: str
    seat: int
    display_name: str
    client_seed: str
    def __init__(self, table_id: _Optional[str] = ..., invite_code: _Optional[str] = ..., seat: _Optional[int] = ..., display_name: _Optional[str] = ..., client_seed: _Optional[str] = ...) -> None: ...

class JoinTableResponse(_message.Message):
    __slots__ = ("table_id", "seat", "seat_token", "view")
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    SEAT_FIELD_NUMBER: _ClassVar[int]
    SEAT_TOKEN_FIELD_NUMBER: _ClassVar[int]
    VIEW_FIELD_NUMBER: _ClassVar[int]
    table_id: str
    seat: int
    seat_token: str
    view: _view_pb2.TableView
    def __init__(self, table_id: _Optional[str] = ..., seat: _Optional[int] = ..., seat_token: _Optional[str] = ..., view: _Optional[_Union[_view_pb2.TableView, _Mapping]] = ...) -> None: ...

class AddBotRequest(_message.Message):
    __slots__ = ("table_id", "seat", "level")
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    SEAT_FIELD_NUMBER: _ClassVar[int]
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    table_id: str
    seat: int
    level: str
    def __init__(self, table_id: _Optional[str] = ..., seat: _Optional[int] = ..., level: _Optional[str] = ...) -> None: ...

class AddBotResponse(_message.Message):
    __slots__ = ("seat", "table")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    TABLE_FIELD_NUMBER: _ClassVar[int]
    seat: int
    table: _table_pb2.Table
    def __init__(self, seat: _Optional[int] = ..., table: _Optional[_Union[_table_pb2.Table, _Mapping]] = ...) -> None: ...

class LeaveTableRequest(_message.Message):
    __slots__ = ("table_id",)
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    table_id: str
    def __init__(self, table_id: _Optional[str] = ...) -> None: ...

class LeaveTableResponse(_message.Message):
    __slots__ = ("forfeited",)
    FORFEITED_FIELD_NUMBER: _ClassVar[int]
    forfeited: bool
    def __init__(self, forfeited: _Optional[bool] = ...) -> None: ...

class GetTableRequest(_message.Message):
    __slots__ = ("table_id",)
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    table_id: str
    def __init__(self, table_id: _Optional[str] = ...) -> None: ...

class GetTableResponse(_message.Message):
    __slots__ = ("view",)
    VIEW_FIELD_NUMBER: _ClassVar[int]
    view: _view_pb2.TableView
    def __init__(self, view: _Optional[_Union[_view_pb2.TableView, _Mapping]] = ...) -> None: ...

class SubmitActionRequest(_message.Message):
    __slots__ = ("table_id", "action", "expected_version", "request_id", "omit_view")
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_VERSION_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    OMIT_VIEW_FIELD_NUMBER: _ClassVar[int]
    table_id: str
    action: _action_pb2.Action
    expected_version: int
    request_id: str
    omit_view: bool
    def __init__(self, table_id: _Optional[str] = ..., action: _Optional[_Union[_action_pb2.Action, _Mapping]] = ..., expected_version: _Optional[int] = ..., request_id: _Optional[str] = ..., omit_view: _Optional[bool] = ...) -> None: ...

class SubmitActionResponse(_message.Message):
    __slots__ = ("table_version", "events", "view")
    TABLE_VERSION_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    VIEW_FIELD_NUMBER: _ClassVar[int]
    table_version: int
    events: _containers.RepeatedCompositeFieldContainer[_event_pb2.Event]
    view: _view_pb2.TableView
    def __init__(self, table_version: _Optional[int] = ..., events: _Optional[_Iterable[_Union[_event_pb2.Event, _Mapping]]] = ..., view: _Optional[_Union[_view_pb2.TableView, _Mapping]] = ...) -> None: ...

class WatchTableRequest(_message.Message):
    __slots__ = ("table_id", "resume_after", "batch_events")
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    RESUME_AFTER_FIELD_NUMBER: _ClassVar[int]
    BATCH_EVENTS_FIELD_NUMBER: _ClassVar[int]
    table_id: str
    resume_after: int
    batch_events: bool
    def __init__(self, table_id: _Optional[str] = ..., resume_after: _Optional[int] = ..., batch_events: _Optional[bool] = ...) -> None: ...

class GetMatchRecordRequest(_message.Message):
    __slots__ = ("table_id", "include_replay")
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_REPLAY_FIELD_NUMBER: _ClassVar[int]
    table_id: str
    include_replay: bool
    def __init__(self, table_id: _Optional[str] = ..., include_replay: _Optional[bool] = ...) -> None: ...

class GetMatchRecordResponse(_message.Message):
    __slots__ = ("record", "replay")
    RECORD_FIELD_NUMBER: _ClassVar[int]
    REPLAY_FIELD_NUMBER: _ClassVar[int]
    record: _record_pb2.MatchRecord
    replay: _containers.RepeatedCompositeFieldContainer[ReplayStep]
    def __init__(self, record: _Optional[_Union[_record_pb2.MatchRecord, _Mapping]] = ..., replay: _Optional[_Iterable[_Union[ReplayStep, _Mapping]]] = ...) -> None: ...

class ReplayStep(_message.Message):
    __slots__ = ("action_index", "events")
    ACTION_INDEX_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    action_index: int
    events: _containers.RepeatedCompositeFieldContainer[_event_pb2.Event]
    def __init__(self, action_index: _Optional[int] = ..., events: _Optional[_Iterable[_Union[_event_pb2.Event, _Mapping]]] = ...) -> None: ...

class WatchTableResponse(_message.Message):
    __slots__ = ("snapshot", "event", "events")
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    snapshot: _view_pb2.TableView
    event: _event_pb2.Event
    events: EventBatch
    def __init__(self, snapshot: _Optional[_Union[_view_pb2.TableView, _Mapping]] = ..., event: _Optional[_Union[_event_pb2.Event, _Mapping]] = ..., events: _Optional[_Union[EventBatch, _Mapping]] = ...) -> None: ...

class EventBatch(_message.Message):
    __slots__ = ("events",)
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[_event_pb2.Event]
    def __init__(self, events: _Optional[_Iterable[_Union[_event_pb2.Event, _Mapping]]] = ...) -> None: ...

class PlayTableRequest(_message.Message):
    __slots__ = ("watch", "submit")
    WATCH_FIELD_NUMBER: _ClassVar[int]
    SUBMIT_FIELD_NUMBER: _ClassVar[int]
    watch: WatchTableRequest
    submit: SubmitActionRequest
    def __init__(self, watch: _Optional[_Union[WatchTableRequest, _Mapping]] = ..., submit: _Optional[_Union[SubmitActionRequest, _Mapping]] = ...) -> None: ...

class PlayTableResponse(_message.Message):
    __slots__ = ("watch", "result")
    WATCH_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    watch: WatchTableResponse
    result: ActionResult
    def __init__(self, watch: _Optional[_Union[WatchTableResponse, _Mapping]] = ..., result: _Optional[_Union[ActionResult, _Mapping]] = ...) -> None: ...

class ActionResult(_message.Message):
    __slots__ = ("request_id", "table_version", "rejected")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    TABLE_VERSION_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    table_version: int
    rejected: ActionRejected
    def __init__(self, request_id: _Optional[str] = ..., table_version: _Optional[int] = ..., rejected: _Optional[_Union[ActionRejected, _Mapping]] = ...) -> None: ...

class ActionRejected(_message.Message):
    __slots__ = ("code", "reason", "message", "metadata", "field")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CODE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    FIELD_FIELD_NUMBER: _ClassVar[int]
    code: int
    reason: str
    message: str
    metadata: _containers.ScalarMap[str, str]
    field: str
    def __init__(self, code: _Optional[int] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ..., metadata: _Optional[_Mapping[str, str]] = ..., field: _Optional[str] = ...) -> None: ...

class FindMatchRequest(_message.Message):
    __slots__ = ("mode",)
    MODE_FIELD_NUMBER: _ClassVar[int]
    mode: str
    def __init__(self, mode: _Optional[str] = ...) -> None: ...

class FindMatchResponse(_message.Message):
    __slots__ = ("ticket_id", "waiting")
    TICKET_ID_FIELD_NUMBER: _ClassVar[int]
    WAITING_FIELD_NUMBER: _ClassVar[int]
    ticket_id: str
    waiting: _matchmaking_pb2.TicketWaiting
    def __init__(self, ticket_id: _Optional[str] = ..., waiting: _Optional[_Union[_matchmaking_pb2.TicketWaiting, _Mapping]] = ...) -> None: ...

class WatchTicketRequest(_message.Message):
    __slots__ = ("ticket_id",)
    TICKET_ID_FIELD_NUMBER: _ClassVar[int]
    ticket_id: str
    def __init__(self, ticket_id: _Optional[str] = ...) -> None: ...

class CreatePlayerRequest(_message.Message):
    __slots__ = ("display_name",)
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    display_name: str
    def __init__(self, display_name: _Optional[str] = ...) -> None: ...

class CreatePlayerResponse(_message.Message):
    __slots__ = ("player", "player_token")
    PLAYER_FIELD_NUMBER: _ClassVar[int]
    PLAYER_TOKEN_FIELD_NUMBER: _ClassVar[int]
    player: _player_pb2.Player
    player_token: str
    def __init__(self, player: _Optional[_Union[_player_pb2.Player, _Mapping]] = ..., player_token: _Optional[str] = ...) -> None: ...

class GetPlayerRequest(_message.Message):
    __slots__ = ("player_id",)
    PLAYER_ID_FIELD_NUMBER: _ClassVar[int]
    player_id: str
    def __init__(self, player_id: _Optional[str] = ...) -> None: ...

class GetPlayerResponse(_message.Message):
    __slots__ = ("player",)
    PLAYER_FIELD_NUMBER: _ClassVar[int]
    player: _player_pb2.Player
    def __init__(self, player: _Optional[_Union[_player_pb2.Player, _Mapping]] = ...) -> None: ...

class ListLeaderboardRequest(_message.Message):
    __slots__ = ("mode", "page_size", "page_token")
    MODE_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    mode: str
    page_size: int
    page_token: str
    def __init__(self, mode: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListLeaderboardResponse(_message.Message):
    __slots__ = ("entries", "next_page_token")
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[_player_pb2.LeaderboardEntry]
    next_page_token: str
    def __init__(self, entries: _Optional[_Iterable[_Union[_player_pb2.LeaderboardEntry, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ListMatchesRequest(_message.Message):
    __slots__ = ("player_id", "page_size", "page_token")
    PLAYER_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    player_id: str
    page_size: int
    page_token: str
    def __init__(self, player_id: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListMatchesResponse(_message.Message):
    __slots__ = ("matches", "next_page_token")
    MATCHES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    matches: _containers.RepeatedCompositeFieldContainer[_player_pb2.MatchSummary]
    next_page_token: str
    def __init__(self, matches: _Optional[_Iterable[_Union[_player_pb2.MatchSummary, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...
