from tute.v1 import card_pb2 as _card_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class MatchEndReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MATCH_END_REASON_UNSPECIFIED: _ClassVar[MatchEndReason]
    MATCH_END_REASON_SCORE: _ClassVar[MatchEndReason]
    MATCH_END_REASON_TUTE: _ClassVar[MatchEndReason]
    MATCH_END_REASON_FORFEIT: _ClassVar[MatchEndReason]
MATCH_END_REASON_UNSPECIFIED: MatchEndReason
MATCH_END_REASON_SCORE: MatchEndReason
MATCH_END_REASON_TUTE: MatchEndReason
MATCH_END_REASON_FORFEIT: MatchEndReason

class Cante(_message.Message):
    __slots__ = ("seat", "side", "suit", "points", "trick_number", "cards")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    SIDE_FIELD_NUMBER: _ClassVar[int]
    SUIT_FIELD_NUMBER: _ClassVar[int]
    POINTS_FIELD_NUMBER: _ClassVar[int]
    TRICK_NUMBER_FIELD_NUMBER: _ClassVar[int]
    CARDS_FIELD_NUMBER: _ClassVar[int]
    seat: int
    side: int
    suit: _card_pb2.Suit
    points: int
    trick_number: int
    cards: _containers.RepeatedCompositeFieldContainer[_card_pb2.Card]
    def __init__(self, seat: _Optional[int] = ..., side: _Optional[int] = ..., suit: _Optional[_Union[_card_pb2.Suit, str]] = ..., points: _Optional[int] = ..., trick_number: _Optional[int] = ..., cards: _Optional[_Iterable[_Union[_card_pb2.Card, _Mapping]]] = ...) -> None: ...

class TuteDeclaration(_message.Message):
    __slots__ = ("seat", "side", "rank", "cards", "trick_number")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    SIDE_FIELD_NUMBER: _ClassVar[int]
    RANK_FIELD_NUMBER: _ClassVar[int]
    CARDS_FIELD_NUMBER: _ClassVar[int]
    TRICK_NUMBER_FIELD_NUMBER: _ClassVar[int]
    seat: int
    side: int
    rank: int
    cards: _containers.RepeatedCompositeFieldContainer[_card_pb2.Card]
    trick_number: int
    def __init__(self, seat: _Optional[int] = ..., side: _Optional[int] = ..., rank: _Optional[int] = ..., cards: _Optional[_Iterable[_Union[_card_pb2.Card, _Mapping]]] = ..., trick_number: _Optional[int] = ...) -> None: ...

class SideHandTotal(_message.Message):
    __slots__ = ("side", "seats", "card_points", "last_trick_points", "cante_points", "total", "tricks_won")
    SIDE_FIELD_NUMBER: _ClassVar[int]
    SEATS_FIELD_NUMBER: _ClassVar[int]
    CARD_POINTS_FIELD_NUMBER: _ClassVar[int]
    LAST_TRICK_POINTS_FIELD_NUMBER: _ClassVar[int]
    CANTE_POINTS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    TRICKS_WON_FIELD_NUMBER: _ClassVar[int]
    side: int
    seats: _containers.RepeatedScalarFieldContainer[int]
    card_points: int
    last_trick_points: int
    cante_points: int
    total: int
    tricks_won: int
    def __init__(self, side: _Optional[int] = ..., seats: _Optional[_Iterable[int]] = ..., card_points: _Optional[int] = ..., last_trick_points: _Optional[int] = ..., cante_points: _Optional[int] = ..., total: _Optional[int] = ..., tricks_won: _Optional[int] = ...) -> None: ...

class HandResult(_message.Message):
    __slots__ = ("game_number", "hand_number", "totals", "winner_side", "capote", "tute", "cantes", "match_points_awarded")
    GAME_NUMBER_FIELD_NUMBER: _ClassVar[int]
    HAND_NUMBER_FIELD_NUMBER: _ClassVar[int]
    TOTALS_FIELD_NUMBER: _ClassVar[int]
    WINNER_SIDE_FIELD_NUMBER: _ClassVar[int]
    CAPOTE_FIELD_NUMBER: _ClassVar[int]
    TUTE_FIELD_NUMBER: _ClassVar[int]
    CANTES_FIELD_NUMBER: _ClassVar[int]
    MATCH_POINTS_AWARDED_FIELD_NUMBER: _ClassVar[int]
    game_number: int
    hand_number: int
    totals: _containers.RepeatedCompositeFieldContainer[SideHandTotal]
    winner_side: int
    capote: bool
    tute: TuteDeclaration
    cantes: _containers.RepeatedCompositeFieldContainer[Cante]
    match_points_awarded: int
    def __init__(self, game_number: _Optional[int] = ..., hand_number: _Optional[int] = ..., totals: _Optional[_Iterable[_Union[SideHandTotal, _Mapping]]] = ..., winner_side: _Optional[int] = ..., capote: _Optional[bool] = ..., tute: _Optional[_Union[TuteDeclaration, _Mapping]] = ..., cantes: _Optional[_Iterable[_Union[Cante, _Mapping]]] = ..., match_points_awarded: _Optional[int] = ...) -> None: ...

class SideScore(_message.Message):
    __slots__ = ("side", "seats", "game_score", "games_won", "match_points", "hand_card_points", "hand_cante_points", "hand_tricks_won")
    SIDE_FIELD_NUMBER: _ClassVar[int]
    SEATS_FIELD_NUMBER: _ClassVar[int]
    GAME_SCORE_FIELD_NUMBER: _ClassVar[int]
    GAMES_WON_FIELD_NUMBER: _ClassVar[int]
    MATCH_POINTS_FIELD_NUMBER: _ClassVar[int]
    HAND_CARD_POINTS_FIELD_NUMBER: _ClassVar[int]
    HAND_CANTE_POINTS_FIELD_NUMBER: _ClassVar[int]
    HAND_TRICKS_WON_FIELD_NUMBER: _ClassVar[int]
    side: int
    seats: _containers.RepeatedScalarFieldContainer[int]
    game_score: int
    games_won: int
    match_points: int
    hand_card_points: int
    hand_cante_points: int
    hand_tricks_won: int
    def __init__(self, side: _Optional[int] = ..., seats: _Optional[_Iterable[int]] = ..., game_score: _Optional[int] = ..., games_won: _Optional[int] = ..., match_points: _Optional[int] = ..., hand_card_points: _Optional[int] = ..., hand_cante_points: _Optional[int] = ..., hand_tricks_won: _Optional[int] = ...) -> None: ...

class GameResult(_message.Message):
    __slots__ = ("game_number", "winner_side", "scores", "by_tute")
    GAME_NUMBER_FIELD_NUMBER: _ClassVar[int]
    WINNER_SIDE_FIELD_NUMBER: _ClassVar[int]
    SCORES_FIELD_NUMBER: _ClassVar[int]
    BY_TUTE_FIELD_NUMBER: _ClassVar[int]
    game_number: int
    winner_side: int
    scores: _containers.RepeatedScalarFieldContainer[int]
    by_tute: bool
    def __init__(self, game_number: _Optional[int] = ..., winner_side: _Optional[int] = ..., scores: _Optional[_Iterable[int]] = ..., by_tute: _Optional[bool] = ...) -> None: ...

class MatchResult(_message.Message):
    __slots__ = ("winner_sides", "winner_seats", "reason", "forfeited_seat", "scores")
    WINNER_SIDES_FIELD_NUMBER: _ClassVar[int]
    WINNER_SEATS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    FORFEITED_SEAT_FIELD_NUMBER: _ClassVar[int]
    SCORES_FIELD_NUMBER: _ClassVar[int]
    winner_sides: _containers.RepeatedScalarFieldContainer[int]
    winner_seats: _containers.RepeatedScalarFieldContainer[int]
    reason: MatchEndReason
    forfeited_seat: int
    scores: _containers.RepeatedCompositeFieldContainer[SideScore]
    def __init__(self, winner_sides: _Optional[_Iterable[int]] = ..., winner_seats: _Optional[_Iterable[int]] = ..., reason: _Optional[_Union[MatchEndReason, str]] = ..., forfeited_seat: _Optional[int] = ..., scores: _Optional[_Iterable[_Union[SideScore, _Mapping]]] = ...) -> None: ...
