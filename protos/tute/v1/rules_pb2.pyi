from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class StockPhaseRules(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    STOCK_PHASE_RULES_UNSPECIFIED: _ClassVar[StockPhaseRules]
    STOCK_PHASE_RULES_FREE: _ClassVar[StockPhaseRules]
    STOCK_PHASE_RULES_TRUMP_LEAD: _ClassVar[StockPhaseRules]
    STOCK_PHASE_RULES_STRICT: _ClassVar[StockPhaseRules]

class CannotOvertrump(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CANNOT_OVERTRUMP_UNSPECIFIED: _ClassVar[CannotOvertrump]
    CANNOT_OVERTRUMP_FREE: _ClassVar[CannotOvertrump]
    CANNOT_OVERTRUMP_MUST_TRUMP: _ClassVar[CannotOvertrump]

class CanteSingers(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CANTE_SINGERS_UNSPECIFIED: _ClassVar[CanteSingers]
    CANTE_SINGERS_WINNER: _ClassVar[CanteSingers]
    CANTE_SINGERS_SIDE: _ClassVar[CanteSingers]

class CantesPerTrick(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CANTES_PER_TRICK_UNSPECIFIED: _ClassVar[CantesPerTrick]
    CANTES_PER_TRICK_ONE: _ClassVar[CantesPerTrick]
    CANTES_PER_TRICK_UNLIMITED: _ClassVar[CantesPerTrick]

class FortyBeforeTwenty(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FORTY_BEFORE_TWENTY_UNSPECIFIED: _ClassVar[FortyBeforeTwenty]
    FORTY_BEFORE_TWENTY_OFF: _ClassVar[FortyBeforeTwenty]
    FORTY_BEFORE_TWENTY_HOLD: _ClassVar[FortyBeforeTwenty]
    FORTY_BEFORE_TWENTY_STRICT: _ClassVar[FortyBeforeTwenty]

class TuteEffect(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TUTE_EFFECT_UNSPECIFIED: _ClassVar[TuteEffect]
    TUTE_EFFECT_WINS_UNIT: _ClassVar[TuteEffect]
    TUTE_EFFECT_WINS_MATCH: _ClassVar[TuteEffect]

class Scoring(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SCORING_UNSPECIFIED: _ClassVar[Scoring]
    SCORING_POINTS: _ClassVar[Scoring]
    SCORING_HANDS: _ClassVar[Scoring]

class TieRule(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TIE_RULE_UNSPECIFIED: _ClassVar[TieRule]
    TIE_RULE_LAST_TRICK: _ClassVar[TieRule]
    TIE_RULE_NONE: _ClassVar[TieRule]
STOCK_PHASE_RULES_UNSPECIFIED: StockPhaseRules
STOCK_PHASE_RULES_FREE: StockPhaseRules
STOCK_PHASE_RULES_TRUMP_LEAD: StockPhaseRules
STOCK_PHASE_RULES_STRICT: StockPhaseRules
CANNOT_OVERTRUMP_UNSPECIFIED: CannotOvertrump
CANNOT_OVERTRUMP_FREE: CannotOvertrump
CANNOT_OVERTRUMP_MUST_TRUMP: CannotOvertrump
CANTE_SINGERS_UNSPECIFIED: CanteSingers
CANTE_SINGERS_WINNER: CanteSingers
CANTE_SINGERS_SIDE: CanteSingers
CANTES_PER_TRICK_UNSPECIFIED: CantesPerTrick
CANTES_PER_TRICK_ONE: CantesPerTrick
CANTES_PER_TRICK_UNLIMITED: CantesPerTrick
FORTY_BEFORE_TWENTY_UNSPECIFIED: FortyBeforeTwenty
FORTY_BEFORE_TWENTY_OFF: FortyBeforeTwenty
FORTY_BEFORE_TWENTY_HOLD: FortyBeforeTwenty
FORTY_BEFORE_TWENTY_STRICT: FortyBeforeTwenty
TUTE_EFFECT_UNSPECIFIED: TuteEffect
TUTE_EFFECT_WINS_UNIT: TuteEffect
TUTE_EFFECT_WINS_MATCH: TuteEffect
SCORING_UNSPECIFIED: Scoring
SCORING_POINTS: Scoring
SCORING_HANDS: Scoring
TIE_RULE_UNSPECIFIED: TieRule
TIE_RULE_LAST_TRICK: TieRule
TIE_RULE_NONE: TieRule

class RuleOptions(_message.Message):
    __slots__ = ("players", "hand_size_2p", "stock_phase_rules", "head_led_suit_when_trumped", "cannot_overtrump", "partner_relief", "cante_singers", "cantes_per_trick", "forty_before_twenty", "cante_requires_held_at_win", "cantes_only_with_stock", "tute_enabled", "tute_effect", "tute_unit_value", "tute_requires_no_prior_cante", "swap_seven", "swap_two_for_low", "swap_requires_trick_won", "scoring", "target_points", "games_to_win", "target_match_points", "capote_value", "tie_rule", "turn_time_s", "first_dealer")
    PLAYERS_FIELD_NUMBER: _ClassVar[int]
    HAND_SIZE_2P_FIELD_NUMBER: _ClassVar[int]
    STOCK_PHASE_RULES_FIELD_NUMBER: _ClassVar[int]
    HEAD_LED_SUIT_WHEN_TRUMPED_FIELD_NUMBER: _ClassVar[int]
    CANNOT_OVERTRUMP_FIELD_NUMBER: _ClassVar[int]
    PARTNER_RELIEF_FIELD_NUMBER: _ClassVar[int]
    CANTE_SINGERS_FIELD_NUMBER: _ClassVar[int]
    CANTES_PER_TRICK_FIELD_NUMBER: _ClassVar[int]
    FORTY_BEFORE_TWENTY_FIELD_NUMBER: _ClassVar[int]
    CANTE_REQUIRES_HELD_AT_WIN_FIELD_NUMBER: _ClassVar[int]
    CANTES_ONLY_WITH_STOCK_FIELD_NUMBER: _ClassVar[int]
    TUTE_ENABLED_FIELD_NUMBER: _ClassVar[int]
    TUTE_EFFECT_FIELD_NUMBER: _ClassVar[int]
    TUTE_UNIT_VALUE_FIELD_NUMBER: _ClassVar[int]
    TUTE_REQUIRES_NO_PRIOR_CANTE_FIELD_NUMBER: _ClassVar[int]
    SWAP_SEVEN_FIELD_NUMBER: _ClassVar[int]
    SWAP_TWO_FOR_LOW_FIELD_NUMBER: _ClassVar[int]
    SWAP_REQUIRES_TRICK_WON_FIELD_NUMBER: _ClassVar[int]
    SCORING_FIELD_NUMBER: _ClassVar[int]
    TARGET_POINTS_FIELD_NUMBER: _ClassVar[int]
    GAMES_TO_WIN_FIELD_NUMBER: _ClassVar[int]
    TARGET_MATCH_POINTS_FIELD_NUMBER: _ClassVar[int]
    CAPOTE_VALUE_FIELD_NUMBER: _ClassVar[int]
    TIE_RULE_FIELD_NUMBER: _ClassVar[int]
    TURN_TIME_S_FIELD_NUMBER: _ClassVar[int]
    FIRST_DEALER_FIELD_NUMBER: _ClassVar[int]
    players: int
    hand_size_2p: int
    stock_phase_rules: StockPhaseRules
    head_led_suit_when_trumped: bool
    cannot_overtrump: CannotOvertrump
    partner_relief: bool
    cante_singers: CanteSingers
    cantes_per_trick: CantesPerTrick
    forty_before_twenty: FortyBeforeTwenty
    cante_requires_held_at_win: bool
    cantes_only_with_stock: bool
    tute_enabled: bool
    tute_effect: TuteEffect
    tute_unit_value: int
    tute_requires_no_prior_cante: bool
    swap_seven: bool
    swap_two_for_low: bool
    swap_requires_trick_won: bool
    scoring: Scoring
    target_points: int
    games_to_win: int
    target_match_points: int
    capote_value: int
    tie_rule: TieRule
    turn_time_s: int
    first_dealer: int
    def __init__(self, players: _Optional[int] = ..., hand_size_2p: _Optional[int] = ..., stock_phase_rules: _Optional[_Union[StockPhaseRules, str]] = ..., head_led_suit_when_trumped: _Optional[bool] = ..., cannot_overtrump: _Optional[_Union[CannotOvertrump, str]] = ..., partner_relief: _Optional[bool] = ..., cante_singers: _Optional[_Union[CanteSingers, str]] = ..., cantes_per_trick: _Optional[_Union[CantesPerTrick, str]] = ..., forty_before_twenty: _Optional[_Union[FortyBeforeTwenty, str]] = ..., cante_requires_held_at_win: _Optional[bool] = ..., cantes_only_with_stock: _Optional[bool] = ..., tute_enabled: _Optional[bool] = ..., tute_effect: _Optional[_Union[TuteEffect, str]] = ..., tute_unit_value: _Optional[int] = ..., tute_requires_no_prior_cante: _Optional[bool] = ..., swap_seven: _Optional[bool] = ..., swap_two_for_low: _Optional[bool] = ..., swap_requires_trick_won: _Optional[bool] = ..., scoring: _Optional[_Union[Scoring, str]] = ..., target_points: _Optional[int] = ..., games_to_win: _Optional[int] = ..., target_match_points: _Optional[int] = ..., capote_value: _Optional[int] = ..., tie_rule: _Optional[_Union[TieRule, str]] = ..., turn_time_s: _Optional[int] = ..., first_dealer: _Optional[int] = ...) -> None: ...

class Rules(_message.Message):
    __slots__ = ("preset", "options")
    PRESET_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    preset: str
    options: RuleOptions
    def __init__(self, preset: _Optional[str] = ..., options: _Optional[_Union[RuleOptions, _Mapping]] = ...) -> None: ...
