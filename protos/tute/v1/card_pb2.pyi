from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Suit(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SUIT_UNSPECIFIED: _ClassVar[Suit]
    SUIT_OROS: _ClassVar[Suit]
    SUIT_COPAS: _ClassVar[Suit]
    SUIT_ESPADAS: _ClassVar[Suit]
    SUIT_BASTOS: _ClassVar[Suit]
SUIT_UNSPECIFIED: Suit
SUIT_OROS: Suit
SUIT_COPAS: Suit
SUIT_ESPADAS: Suit
SUIT_BASTOS: Suit

class Card(_message.Message):
    __slots__ = ("suit", "rank")
    SUIT_FIELD_NUMBER: _ClassVar[int]
    RANK_FIELD_NUMBER: _ClassVar[int]
    suit: Suit
    rank: int
    def __init__(self, suit: _Optional[_Union[Suit, str]] = ..., rank: _Optional[int] = ...) -> None: ...

class PlayedCard(_message.Message):
    __slots__ = ("seat", "card", "timed_out")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    CARD_FIELD_NUMBER: _ClassVar[int]
    TIMED_OUT_FIELD_NUMBER: _ClassVar[int]
    seat: int
    card: Card
    timed_out: bool
    def __init__(self, seat: _Optional[int] = ..., card: _Optional[_Union[Card, _Mapping]] = ..., timed_out: _Optional[bool] = ...) -> None: ...

class Trick(_message.Message):
    __slots__ = ("number", "leader", "cards", "winner", "points")
    NUMBER_FIELD_NUMBER: _ClassVar[int]
    LEADER_FIELD_NUMBER: _ClassVar[int]
    CARDS_FIELD_NUMBER: _ClassVar[int]
    WINNER_FIELD_NUMBER: _ClassVar[int]
    POINTS_FIELD_NUMBER: _ClassVar[int]
    number: int
    leader: int
    cards: _containers.RepeatedCompositeFieldContainer[PlayedCard]
    winner: int
    points: int
    def __init__(self, number: _Optional[int] = ..., leader: _Optional[int] = ..., cards: _Optional[_Iterable[_Union[PlayedCard, _Mapping]]] = ..., winner: _Optional[int] = ..., points: _Optional[int] = ...) -> None: ...
