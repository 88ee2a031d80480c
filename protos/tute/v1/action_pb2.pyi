from tute.v1 import card_pb2 as _card_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Action(_message.Message):
    __slots__ = ("play_card", "sing", "declare_tute", "exchange_trump")
    PLAY_CARD_FIELD_NUMBER: _ClassVar[int]
    SING_FIELD_NUMBER: _ClassVar[int]
    DECLARE_TUTE_FIELD_NUMBER: _ClassVar[int]
    EXCHANGE_TRUMP_FIELD_NUMBER: _ClassVar[int]
    play_card: _card_pb2.Card
    sing: _card_pb2.Suit
    declare_tute: DeclareTute
    exchange_trump: ExchangeTrump
    def __init__(self, play_card: _Optional[_Union[_card_pb2.Card, _Mapping]] = ..., sing: _Optional[_Union[_card_pb2.Suit, str]] = ..., declare_tute: _Optional[_Union[DeclareTute, _Mapping]] = ..., exchange_trump: _Optional[_Union[ExchangeTrump, _Mapping]] = ...) -> None: ...

class DeclareTute(_message.Message):
    __slots__ = ("rank",)
    RANK_FIELD_NUMBER: _ClassVar[int]
    rank: int
    def __init__(self, rank: _Optional[int] = ...) -> None: ...

class ExchangeTrump(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
