import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from tute.v1 import action_pb2 as _action_pb2
from tute.v1 import card_pb2 as _card_pb2
from tute.v1 import record_pb2 as _record_pb2
from tute.v1 import rules_pb2 as _rules_pb2
from tute.v1 import score_pb2 as _score_pb2
from tute.v1 import table_pb2 as _table_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ForfeitReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FORFEIT_REASON_UNSPECIFIED: _ClassVar[ForfeitReason]
    FORFEIT_REASON_LEFT: _ClassVar[ForfeitReason]
    FORFEIT_REASON_DISCONNECTED: _ClassVar[ForfeitReason]
FORFEIT_REASON_UNSPECIFIED: ForfeitReason
FORFEIT_REASON_LEFT: ForfeitReason
FORFEIT_REASON_DISCONNECTED: ForfeitReason

class Event(_message.Message):
    __slots__ = ("sequence", "table_version", "time", "seat_joined", "seat_left", "match_started", "hand_dealt", "turn_started", "card_played", "trick_taken", "card_drawn", "cante_sung", "tute_declared", "trump_exchanged", "turn_timed_out", "hand_scored", "game_ended", "player_forfeited", "match_ended")
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    TABLE_VERSION_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    SEAT_JOINED_FIELD_NUMBER: _ClassVar[int]
    SEAT_LEFT_FIELD_NUMBER: _ClassVar[int]
    MATCH_STARTED_FIELD_NUMBER: _ClassVar[int]
    HAND_DEALT_FIELD_NUMBER: _ClassVar[int]
    TURN_STARTED_FIELD_NUMBER: _ClassVar[int]
    CARD_PLAYED_FIELD_NUMBER: _ClassVar[int]
    TRICK_TAKEN_FIELD_NUMBER: _ClassVar[int]
    CARD_DRAWN_FIELD_NUMBER: _ClassVar[int]
    CANTE_SUNG_FIELD_NUMBER: _ClassVar[int]
    TUTE_DECLARED_FIELD_NUMBER: _ClassVar[int]
    TRUMP_EXCHANGED_FIELD_NUMBER: _ClassVar[int]
    TURN_TIMED_OUT_FIELD_NUMBER: _ClassVar[int]
    HAND_SCORED_FIELD_NUMBER: _ClassVar[int]
    GAME_ENDED_FIELD_NUMBER: _ClassVar[int]
    PLAYER_FORFEITED_FIELD_NUMBER: _ClassVar[int]
    MATCH_ENDED_FIELD_NUMBER: _ClassVar[int]
    sequence: int
    table_version: int
    time: _timestamp_pb2.Timestamp
    seat_joined: SeatJoined
    seat_left: SeatLeft
    match_started: MatchStarted
    hand_dealt: HandDealt
    turn_started: TurnStarted
    card_played: CardPlayed
    trick_taken: TrickTaken
    card_drawn: CardDrawn
    cante_sung: CanteSung
    tute_declared: TuteDeclared
    trump_exchanged: TrumpExchanged
    turn_timed_out: TurnTimedOut
    hand_scored: HandScored
    game_ended: GameEnded
    player_forfeited: PlayerForfeited
    match_ended: MatchEnded
    def __init__(self, sequence: _Optional[int] = ..., table_version: _Optional[int] = ..., time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., seat_joined: _Optional[_Union[SeatJoined, _Mapping]] = ..., seat_left: _Optional[_Union[SeatLeft, _Mapping]] = ..., match_started: _Optional[_Union[MatchStarted, _Mapping]] = ..., hand_dealt: _Optional[_Union[HandDealt, _Mapping]] = ..., turn_started: _Optional[_Union[TurnStarted, _Mapping]] = ..., card_played: _Optional[_Union[CardPlayed, _Mapping]] = ..., trick_taken: _Optional[_Union[TrickTaken, _Mapping]] = ..., card_drawn: _Optional[_Union[CardDrawn, _Mapping]] = ..., cante_sung: _Optional[_Union[CanteSung, _Mapping]] = ..., tute_declared: _Optional[_Union[TuteDeclared, _Mapping]] = ..., trump_exchanged: _Optional[_Union[TrumpExchanged, _Mapping]] = ..., turn_timed_out: _Optional[_Union[TurnTimedOut, _Mapping]] = ..., hand_scored: _Optional[_Union[HandScored, _Mapping]] = ..., game_ended: _Optional[_Union[GameEnded, _Mapping]] = ..., player_forfeited: _Optional[_Union[PlayerForfeited, _Mapping]] = ..., match_ended: _Optional[_Union[MatchEnded, _Mapping]] = ...) -> None: ...

class SeatJoined(_message.Message):
    __slots__ = ("seat",)
    SEAT_FIELD_NUMBER: _ClassVar[int]
    seat: _table_pb2.Seat
    def __init__(self, seat: _Optional[_Union[_table_pb2.Seat, _Mapping]] = ...) -> None: ...

class SeatLeft(_message.Message):
    __slots__ = ("seat",)
    SEAT_FIELD_NUMBER: _ClassVar[int]
    seat: int
    def __init__(self, seat: _Optional[int] = ...) -> None: ...

class MatchStarted(_message.Message):
    __slots__ = ("seats", "rules", "first_dealer", "client_seeds")
    SEATS_FIELD_NUMBER: _ClassVar[int]
    RULES_FIELD_NUMBER: _ClassVar[int]
    FIRST_DEALER_FIELD_NUMBER: _ClassVar[int]
    CLIENT_SEEDS_FIELD_NUMBER: _ClassVar[int]
    seats: _containers.RepeatedCompositeFieldContainer[_table_pb2.Seat]
    rules: _rules_pb2.Rules
    first_dealer: int
    client_seeds: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, seats: _Optional[_Iterable[_Union[_table_pb2.Seat, _Mapping]]] = ..., rules: _Optional[_Union[_rules_pb2.Rules, _Mapping]] = ..., first_dealer: _Optional[int] = ..., client_seeds: _Optional[_Iterable[str]] = ...) -> None: ...

class HandDealt(_message.Message):
    __slots__ = ("game_number", "hand_number", "dealer", "trump_suit", "trump_card", "hand", "hand_sizes", "stock_size", "deal_commitment", "shuffle_algorithm")
    GAME_NUMBER_FIELD_NUMBER: _ClassVar[int]
    HAND_NUMBER_FIELD_NUMBER: _ClassVar[int]
    DEALER_FIELD_NUMBER: _ClassVar[int]
    TRUMP_SUIT_FIELD_NUMBER: _ClassVar[int]
    TRUMP_CARD_FIELD_NUMBER: _ClassVar[int]
    HAND_FIELD_NUMBER: _ClassVar[int]
    HAND_SIZES_FIELD_NUMBER: _ClassVar[int]
    STOCK_SIZE_FIELD_NUMBER: _ClassVar[int]
    DEAL_COMMITMENT_FIELD_NUMBER: _ClassVar[int]
    SHUFFLE_ALGORITHM_FIELD_NUMBER: _ClassVar[int]
    game_number: int
    hand_number: int
    dealer: int
    trump_suit: _card_pb2.Suit
    trump_card: _card_pb2.Card
    hand: _containers.RepeatedCompositeFieldContainer[_card_pb2.Card]
    hand_sizes: _containers.RepeatedScalarFieldContainer[int]
    stock_size: int
    deal_commitment: str
    shuffle_algorithm: str
    def __init__(self, game_number: _Optional[int] = ..., hand_number: _Optional[int] = ..., dealer: _Optional[int] = ..., trump_suit: _Optional[_Union[_card_pb2.Suit, str]] = ..., trump_card: _Optional[_Union[_card_pb2.Card, _Mapping]] = ..., hand: _Optional[_Iterable[_Union[_card_pb2.Card, _Mapping]]] = ..., hand_sizes: _Optional[_Iterable[int]] = ..., stock_size: _Optional[int] = ..., deal_commitment: _Optional[str] = ..., shuffle_algorithm: _Optional[str] = ...) -> None: ...

class TurnStarted(_message.Message):
    __slots__ = ("seat", "kind", "trick_number", "deadline", "legal_actions")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    TRICK_NUMBER_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_FIELD_NUMBER: _ClassVar[int]
    LEGAL_ACTIONS_FIELD_NUMBER: _ClassVar[int]
    seat: int
    kind: _table_pb2.TurnKind
    trick_number: int
    deadline: _timestamp_pb2.Timestamp
    legal_actions: _containers.RepeatedCompositeFieldContainer[_action_pb2.Action]
    def __init__(self, seat: _Optional[int] = ..., kind: _Optional[_Union[_table_pb2.TurnKind, str]] = ..., trick_number: _Optional[int] = ..., deadline: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., legal_actions: _Optional[_Iterable[_Union[_action_pb2.Action, _Mapping]]] = ...) -> None: ...

class CardPlayed(_message.Message):
    __slots__ = ("seat", "card", "trick_number", "timed_out")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    CARD_FIELD_NUMBER: _ClassVar[int]
    TRICK_NUMBER_FIELD_NUMBER: _ClassVar[int]
    TIMED_OUT_FIELD_NUMBER: _ClassVar[int]
    seat: int
    card: _card_pb2.Card
    trick_number: int
    timed_out: bool
    def __init__(self, seat: _Optional[int] = ..., card: _Optional[_Union[_card_pb2.Card, _Mapping]] = ..., trick_number: _Optional[int] = ..., timed_out: _Optional[bool] = ...) -> None: ...

class TrickTaken(_message.Message):
    __slots__ = ("trick", "winner_side", "last_trick")
    TRICK_FIELD_NUMBER: _ClassVar[int]
    WINNER_SIDE_FIELD_NUMBER: _ClassVar[int]
    LAST_TRICK_FIELD_NUMBER: _ClassVar[int]
    trick: _card_pb2.Trick
    winner_side: int
    last_trick: bool
    def __init__(self, trick: _Optional[_Union[_card_pb2.Trick, _Mapping]] = ..., winner_side: _Optional[int] = ..., last_trick: _Optional[bool] = ...) -> None: ...

class CardDrawn(_message.Message):
    __slots__ = ("seat", "card", "turned_card", "stock_size")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    CARD_FIELD_NUMBER: _ClassVar[int]
    TURNED_CARD_FIELD_NUMBER: _ClassVar[int]
    STOCK_SIZE_FIELD_NUMBER: _ClassVar[int]
    seat: int
    card: _card_pb2.Card
    turned_card: bool
    stock_size: int
    def __init__(self, seat: _Optional[int] = ..., card: _Optional[_Union[_card_pb2.Card, _Mapping]] = ..., turned_card: _Optional[bool] = ..., stock_size: _Optional[int] = ...) -> None: ...

class CanteSung(_message.Message):
    __slots__ = ("cante",)
    CANTE_FIELD_NUMBER: _ClassVar[int]
    cante: _score_pb2.Cante
    def __init__(self, cante: _Optional[_Union[_score_pb2.Cante, _Mapping]] = ...) -> None: ...

class TuteDeclared(_message.Message):
    __slots__ = ("tute",)
    TUTE_FIELD_NUMBER: _ClassVar[int]
    tute: _score_pb2.TuteDeclaration
    def __init__(self, tute: _Optional[_Union[_score_pb2.TuteDeclaration, _Mapping]] = ...) -> None: ...

class TrumpExchanged(_message.Message):
    __slots__ = ("seat", "taken", "given")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    TAKEN_FIELD_NUMBER: _ClassVar[int]
    GIVEN_FIELD_NUMBER: _ClassVar[int]
    seat: int
    taken: _card_pb2.Card
    given: _card_pb2.Card
    def __init__(self, seat: _Optional[int] = ..., taken: _Optional[_Union[_card_pb2.Card, _Mapping]] = ..., given: _Optional[_Union[_card_pb2.Card, _Mapping]] = ...) -> None: ...

class TurnTimedOut(_message.Message):
    __slots__ = ("seat", "trick_number")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    TRICK_NUMBER_FIELD_NUMBER: _ClassVar[int]
    seat: int
    trick_number: int
    def __init__(self, seat: _Optional[int] = ..., trick_number: _Optional[int] = ...) -> None: ...

class HandScored(_message.Message):
    __slots__ = ("result", "scores", "deal")
    RESULT_FIELD_NUMBER: _ClassVar[int]
    SCORES_FIELD_NUMBER: _ClassVar[int]
    DEAL_FIELD_NUMBER: _ClassVar[int]
    result: _score_pb2.HandResult
    scores: _containers.RepeatedCompositeFieldContainer[_score_pb2.SideScore]
    deal: _record_pb2.DealReveal
    def __init__(self, result: _Optional[_Union[_score_pb2.HandResult, _Mapping]] = ..., scores: _Optional[_Iterable[_Union[_score_pb2.SideScore, _Mapping]]] = ..., deal: _Optional[_Union[_record_pb2.DealReveal, _Mapping]] = ...) -> None: ...

class GameEnded(_message.Message):
    __slots__ = ("result",)
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: _score_pb2.GameResult
    def __init__(self, result: _Optional[_Union[_score_pb2.GameResult, _Mapping]] = ...) -> None: ...

class PlayerForfeited(_message.Message):
    __slots__ = ("seat", "reason")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    seat: int
    reason: ForfeitReason
    def __init__(self, seat: _Optional[int] = ..., reason: _Optional[_Union[ForfeitReason, str]] = ...) -> None: ...

class MatchEnded(_message.Message):
    __slots__ = ("result", "unfinished_deal")
    RESULT_FIELD_NUMBER: _ClassVar[int]
    UNFINISHED_DEAL_FIELD_NUMBER: _ClassVar[int]
    result: _score_pb2.MatchResult
    unfinished_deal: _record_pb2.DealReveal
    def __init__(self, result: _Optional[_Union[_score_pb2.MatchResult, _Mapping]] = ..., unfinished_deal: _Optional[_Union[_record_pb2.DealReveal, _Mapping]] = ...) -> None: ...
