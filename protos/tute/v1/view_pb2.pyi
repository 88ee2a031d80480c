import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from tute.v1 import action_pb2 as _action_pb2
from tute.v1 import card_pb2 as _card_pb2
from tute.v1 import rules_pb2 as _rules_pb2
from tute.v1 import score_pb2 as _score_pb2
from tute.v1 import table_pb2 as _table_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SeatHand(_message.Message):
    __slots__ = ("seat", "hand_size", "public_cards", "tricks_won")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    HAND_SIZE_FIELD_NUMBER: _ClassVar[int]
    PUBLIC_CARDS_FIELD_NUMBER: _ClassVar[int]
    TRICKS_WON_FIELD_NUMBER: _ClassVar[int]
    seat: int
    hand_size: int
    public_cards: _containers.RepeatedCompositeFieldContainer[_card_pb2.Card]
    tricks_won: int
    def __init__(self, seat: _Optional[int] = ..., hand_size: _Optional[int] = ..., public_cards: _Optional[_Iterable[_Union[_card_pb2.Card, _Mapping]]] = ..., tricks_won: _Optional[int] = ...) -> None: ...

class TableView(_message.Message):
    __slots__ = ("table_id", "version", "last_event_sequence", "status", "rules", "visibility", "seats", "my_seat", "invite_code", "hand", "legal_actions", "seat_hands", "game_number", "hand_number", "dealer", "trump_suit", "trump_card", "turned_card", "stock_size", "current_trick", "completed_tricks", "cantes", "scores", "turn_seat", "turn_kind", "turn_deadline", "last_hand_result", "game_results", "match_result")
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    LAST_EVENT_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    RULES_FIELD_NUMBER: _ClassVar[int]
    VISIBILITY_FIELD_NUMBER: _ClassVar[int]
    SEATS_FIELD_NUMBER: _ClassVar[int]
    MY_SEAT_FIELD_NUMBER: _ClassVar[int]
    INVITE_CODE_FIELD_NUMBER: _ClassVar[int]
    HAND_FIELD_NUMBER: _ClassVar[int]
    LEGAL_ACTIONS_FIELD_NUMBER: _ClassVar[int]
    SEAT_HANDS_FIELD_NUMBER: _ClassVar[int]
    GAME_NUMBER_FIELD_NUMBER: _ClassVar[int]
    HAND_NUMBER_FIELD_NUMBER: _ClassVar[int]
    DEALER_FIELD_NUMBER: _ClassVar[int]
    TRUMP_SUIT_FIELD_NUMBER: _ClassVar[int]
    TRUMP_CARD_FIELD_NUMBER: _ClassVar[int]
    TURNED_CARD_FIELD_NUMBER: _ClassVar[int]
    STOCK_SIZE_FIELD_NUMBER: _ClassVar[int]
    CURRENT_TRICK_FIELD_NUMBER: _ClassVar[int]
    COMPLETED_TRICKS_FIELD_NUMBER: _ClassVar[int]
    CANTES_FIELD_NUMBER: _ClassVar[int]
    SCORES_FIELD_NUMBER: _ClassVar[int]
    TURN_SEAT_FIELD_NUMBER: _ClassVar[int]
    TURN_KIND_FIELD_NUMBER: _ClassVar[int]
    TURN_DEADLINE_FIELD_NUMBER: _ClassVar[int]
    LAST_HAND_RESULT_FIELD_NUMBER: _ClassVar[int]
    GAME_RESULTS_FIELD_NUMBER: _ClassVar[int]
    MATCH_RESULT_FIELD_NUMBER: _ClassVar[int]
    table_id: str
    version: int
    last_event_sequence: int
    status: _table_pb2.TableStatus
    rules: _rules_pb2.Rules
    visibility: _table_pb2.Visibility
    seats: _containers.RepeatedCompositeFieldContainer[_table_pb2.Seat]
    my_seat: int
    invite_code: str
    hand: _containers.RepeatedCompositeFieldContainer[_card_pb2.Card]
    legal_actions: _containers.RepeatedCompositeFieldContainer[_action_pb2.Action]
    seat_hands: _containers.RepeatedCompositeFieldContainer[SeatHand]
    game_number: int
    hand_number: int
    dealer: int
    trump_suit: _card_pb2.Suit
    trump_card: _card_pb2.Card
    turned_card: _card_pb2.Card
    stock_size: int
    current_trick: _card_pb2.Trick
    completed_tricks: _containers.RepeatedCompositeFieldContainer[_card_pb2.Trick]
    cantes: _containers.RepeatedCompositeFieldContainer[_score_pb2.Cante]
    scores: _containers.RepeatedCompositeFieldContainer[_score_pb2.SideScore]
    turn_seat: int
    turn_kind: _table_pb2.TurnKind
    turn_deadline: _timestamp_pb2.Timestamp
    last_hand_result: _score_pb2.HandResult
    game_results: _containers.RepeatedCompositeFieldContainer[_score_pb2.GameResult]
    match_result: _score_pb2.MatchResult
    def __init__(self, table_id: _Optional[str] = ..., version: _Optional[int] = ..., last_event_sequence: _Optional[int] = ..., status: _Optional[_Union[_table_pb2.TableStatus, str]] = ..., rules: _Optional[_Union[_rules_pb2.Rules, _Mapping]] = ..., visibility: _Optional[_Union[_table_pb2.Visibility, str]] = ..., seats: _Optional[_Iterable[_Union[_table_pb2.Seat, _Mapping]]] = ..., my_seat: _Optional[int] = ..., invite_code: _Optional[str] = ..., hand: _Optional[_Iterable[_Union[_card_pb2.Card, _Mapping]]] = ..., legal_actions: _Optional[_Iterable[_Union[_action_pb2.Action, _Mapping]]] = ..., seat_hands: _Optional[_Iterable[_Union[SeatHand, _Mapping]]] = ..., game_number: _Optional[int] = ..., hand_number: _Optional[int] = ..., dealer: _Optional[int] = ..., trump_suit: _Optional[_Union[_card_pb2.Suit, str]] = ..., trump_card: _Optional[_Union[_card_pb2.Card, _Mapping]] = ..., turned_card: _Optional[_Union[_card_pb2.Card, _Mapping]] = ..., stock_size: _Optional[int] = ..., current_trick: _Optional[_Union[_card_pb2.Trick, _Mapping]] = ..., completed_tricks: _Optional[_Iterable[_Union[_card_pb2.Trick, _Mapping]]] = ..., cantes: _Optional[_Iterable[_Union[_score_pb2.Cante, _Mapping]]] = ..., scores: _Optional[_Iterable[_Union[_score_pb2.SideScore, _Mapping]]] = ..., turn_seat: _Optional[int] = ..., turn_kind: _Optional[_Union[_table_pb2.TurnKind, str]] = ..., turn_deadline: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., last_hand_result: _Optional[_Union[_score_pb2.HandResult, _Mapping]] = ..., game_results: _Optional[_Iterable[_Union[_score_pb2.GameResult, _Mapping]]] = ..., match_result: _Optional[_Union[_score_pb2.MatchResult, _Mapping]] = ...) -> None: ...
