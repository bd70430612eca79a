"""Reading one side of an equation (:mod:`reasonscope.attack.arithmetic`) into an exact value.

A small operator-precedence parser over the checker's tokens.
"""

from __future__ import annotations

from fractions import Fraction

from .arithmetic_tokens import _MAX_EXPONENT, _UNIT_KINDS, _singular, _Tok, _Unreadable


class _Side:
    """One side of a chain: its tokens, parsed once, evaluable with percent = 1/100 or = 1."""

    def __init__(self, toks: list[_Tok], text: str):
        self.toks, self.text = toks, text
        self.tight_fraction = False  # an unspaced fraction was read as one number
        self.has_op = any(t.kind == "op" for t in toks)
        self.percent = any(t.kind == "num" and t.percent for t in toks)
        self.money = any(t.kind == "num" and t.text[0] in "$€£¥" for t in toks)
        self.units = self._units() | ({"dollar"} if self.money else set())
        self.rate = self._rate()
        self.stated = self._stated_number()

    def _rate(self) -> bool:
        """The side names a rate (``inches/step``, ``$15/phone``, ``miles per hour``)."""
        return any(t.kind == "unit" and (t.text == "/" or t.text.lower() == "per") for t in self.toks)

    def _units(self) -> set[str]:
        """The units of measure named in the side, singular (``6 days`` -> ``day``).

        Rates such as ``inches/step`` and words that are no unit of measure are left out.
        """
        out, current = set(), []
        for t in [*self.toks, _Tok("stop", "", 0, 0)]:
            if t.kind == "unit":
                current.append(t.text.lower())
            elif current:
                if "/" not in current:
                    out.update(next(([u] for u in map(_singular, current) if u in _UNIT_KINDS), []))
                current = []
        return out

    def _stated_number(self) -> _Tok | None:
        inner = [t for t in self.toks if t.kind not in ("lp", "rp", "unit") and t.text != "-"]
        signs = [t for t in self.toks if t.text == "-"]
        if len(inner) == 1 and inner[0].kind == "num" and len(signs) <= 1 and \
                (not signs or self.toks.index(signs[0]) < self.toks.index(inner[0])):
            return inner[0]
        return None

    def last_place(self, percent_scale: Fraction) -> Fraction | None:
        """One unit of the last place the side states, or None when it is not a single stated number.

        For example ``33.33`` -> 0.01, ``25%`` -> 0.01 * 1/100.
        """
        if self.stated is None:
            return None
        return Fraction(1, 10 ** self.stated.decimals) * (percent_scale if self.stated.percent else 1)

    def value(self, percent_scale: Fraction, *, tight: bool = True) -> Fraction:
        parser = _Parser(self.toks, percent_scale, tight=tight)
        v = parser.expr()
        if parser.i != len(self.toks):
            raise _Unreadable("does not parse as a whole")
        self.tight_fraction = self.tight_fraction or parser.tight_fraction
        return v


class _Parser:
    """Operator-precedence parser of one side, by this grammar.

    expr := term (('+'|'-') term)*; term := unary (('*'|'/') unary)*; unary := ('-'|'+') unary | power;
    power := atom ('^' unary)?; atom := number [proper fraction] | '(' expr ')'.
    """

    def __init__(self, toks: list[_Tok], percent_scale: Fraction, *, tight: bool = True):
        self.toks, self.i, self.scale, self.tight = toks, 0, percent_scale, tight
        self.tight_fraction = False

    def _peek(self, k: int = 0) -> _Tok | None:
        return self.toks[self.i + k] if self.i + k < len(self.toks) else None

    def _op(self, *ops: str) -> str | None:
        t = self._peek()
        if t is not None and t.kind == "op" and t.text in ops:
            self.i += 1
            return t.text
        return None

    def expr(self) -> Fraction:
        v = self.term()
        while (op := self._op("+", "-")) is not None:
            w = self.term()
            v = v + w if op == "+" else v - w
        return v

    def term(self) -> Fraction:
        v = self.unary()
        while (op := self._op("*", "/")) is not None:
            w = self.unary()
            if op == "*":
                v = v * w
            elif w == 0:
                raise ZeroDivisionError("division by zero")
            else:
                v = v / w
        return v

    def unary(self) -> Fraction:
        op = self._op("-", "+")
        if op is not None:
            v = self.unary()
            return -v if op == "-" else v
        return self.power()

    def power(self) -> Fraction:
        base = self.atom()
        if self._op("^") is None:
            return base
        exp = self.unary()
        if exp.denominator != 1 or abs(exp) > _MAX_EXPONENT or (base == 0 and exp < 0):
            raise _Unreadable("unsupported power")
        return base ** int(exp)

    def atom(self) -> Fraction:
        t = self._peek()
        if t is None:
            raise _Unreadable("an operand is missing")
        if t.kind == "lp":
            self.i += 1
            v = self.expr()
            close = self._peek()
            if close is None or close.kind != "rp":
                raise _Unreadable("unmatched parenthesis")
            self.i += 1
            self._skip_units()
            return v
        if t.kind != "num":
            raise _Unreadable(f"unexpected {t.text!r}")
        self.i += 1
        v = t.value * (self.scale if t.percent else 1)
        mixed = self._proper_fraction(t)
        tight = self._tight_denominator(t) if mixed is None else None
        self._skip_units()
        if mixed is not None:
            return v + mixed
        return v / tight if tight is not None else v

    def _skip_units(self) -> None:
        while (t := self._peek()) is not None and t.kind == "unit":
            self.i += 1

    def _tight_denominator(self, num: _Tok) -> Fraction | None:
        """The denominator of an unspaced fraction after ``num`` (consumed), or None.

        ``1/3`` written without spaces is one number.

        ``25 / 1/3`` is 25 / (1/3) = 75. Not inside a longer run of unspaced divisions (``100/4/5`` is read
        left to right).
        """
        slash, den, after = self._peek(), self._peek(1), self._peek(2)
        before = self.toks[self.i - 2] if self.i >= 2 else None
        if (not self.tight or slash is None or den is None or slash.text != "/" or den.kind != "num" or num.decimals or den.decimals
                or num.percent or den.percent or num.end != slash.start or slash.end != den.start
                or den.text[0] in "$€£¥" or den.value == 0
                or (before is not None and before.text == "/" and before.end == num.start)
                or (after is not None and after.kind == "op" and after.text == "/" and after.start == den.end)):
            return None
        self.i += 2
        self.tight_fraction = True
        return den.value

    def _proper_fraction(self, whole: _Tok) -> Fraction | None:
        """``1 1/2``: a whole number followed by a proper fraction of whole numbers."""
        a, slash, b = self._peek(), self._peek(1), self._peek(2)
        if (whole.decimals or whole.percent or a is None or slash is None or b is None or a.kind != "num"
                or slash.text != "/" or b.kind != "num" or a.decimals or b.decimals or a.percent or b.percent
                or a.text[0] in "$€£¥" or not 0 < a.value < b.value):
            return None
        self.i += 3
        return a.value / b.value


# -- chains and links ----------------------------------------------------------------------------------
