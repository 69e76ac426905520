package postback

import (
	"errors"
	"math/big"
	"strconv"
	"strings"

	"golang.org/x/text/currency"
)

// maxExponent bounds a payout's exponent (1e30 is already absurd money), so
// a payload cannot make the exact arithmetic below allocate without end.
const maxExponent = 30

// Share returns bp basis points of the decimal number value, rounded half
// away from zero to decimals places and written with exactly that many
// (7000 bp of "12.5" at 2 places is "8.75"; of "0.125" is "0.09", from
// 0.0875; of "10" is "7.00"). The arithmetic is exact (math/big); the
// only rounding is the last step. Half away from zero is what a person
// checking a payout by hand does, and a tracker's report rounds the same.
//
// value is JSON number text or the same text in a string: an optional
// "-", digits, an optional fraction and exponent. Anything else is an
// error.
func Share(value string, bp, decimals int) (string, error) {
	x, err := parseDecimal(value)
	if err != nil {
		return "", err
	}
	scale := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(decimals)), nil)
	// q = x * bp / 10000 * 10^decimals, as num/den.
	num := new(big.Int).Mul(x.Num(), big.NewInt(int64(bp)))
	num.Mul(num, scale)
	den := new(big.Int).Mul(x.Denom(), big.NewInt(10000))
	neg := num.Sign() < 0
	num.Abs(num)
	q, rem := new(big.Int).QuoRem(num, den, new(big.Int))
	if rem.Lsh(rem, 1).Cmp(den) >= 0 { // the remainder is half or more
		q.Add(q, big.NewInt(1))
	}
	digits := q.String()
	if decimals > 0 {
		if len(digits) <= decimals {
			digits = strings.Repeat("0", decimals-len(digits)+1) + digits
		}
		digits = digits[:len(digits)-decimals] + "." + digits[len(digits)-decimals:]
	}
	if neg && q.Sign() != 0 {
		digits = "-" + digits
	}
	return digits, nil
}

// parseDecimal parses JSON number text exactly. big.Rat's own SetString
// also takes fractions ("1/3") and hexadecimal, which no payout is.
func parseDecimal(s string) (*big.Rat, error) {
	bad := errors.New("not a decimal number")
	mant, exp := s, 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(s[i+1:])
		if err != nil || e > maxExponent || e < -maxExponent {
			return nil, bad
		}
		mant, exp = s[:i], e
	}
	digits := strings.TrimPrefix(mant, "-")
	whole, frac, _ := strings.Cut(digits, ".")
	if whole == "" || strings.Contains(mant, ".") && frac == "" || !allDigits(whole) || !allDigits(frac) {
		return nil, bad
	}
	x, ok := new(big.Rat).SetString(mant)
	if !ok {
		return nil, bad
	}
	if exp != 0 {
		p := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(abs(exp))), nil))
		if exp > 0 {
			x.Mul(x, p)
		} else {
			x.Quo(x, p)
		}
	}
	return x, nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// CurrencyDecimals is the number of decimals a payout in the ISO 4217
// currency code is rounded to: the currency's minor unit as CLDR gives it
// (JPY, KRW, ISK, CLP 0; BHD, KWD 3; USD, EUR 2), and 2 for a code it does
// not know.
func CurrencyDecimals(code string) int {
	u, err := currency.ParseISO(strings.TrimSpace(code))
	if err != nil {
		return 2
	}
	scale, _ := currency.Standard.Rounding(u)
	return scale
}

// ParsePercent reads a share written as a percent with at most two
// decimals ("70", "70.5", "12.25") into basis points.
func ParsePercent(s string) (int, error) {
	s = strings.TrimSuffix(strings.TrimSpace(s), "%")
	whole, frac, hasFrac := strings.Cut(strings.TrimSpace(s), ".")
	if whole == "" || !allDigits(whole) || !allDigits(frac) || len(frac) > 2 || (hasFrac && frac == "") || len(whole) > 3 {
		return 0, errors.New("write the share as a percent with at most two decimals, like 70 or 62.5")
	}
	w, _ := strconv.Atoi(whole)
	f, _ := strconv.Atoi((frac + "00")[:2])
	bp := w*100 + f
	if bp <= 0 || bp > 10000 {
		return 0, errors.New("must be more than 0 and at most 100 (percent)")
	}
	return bp, nil
}

// FormatPercent writes basis points as ParsePercent reads them: "70",
// "62.5", "12.25".
func FormatPercent(bp int) string {
	s := strconv.Itoa(bp / 100)
	if f := bp % 100; f != 0 {
		s += strings.TrimRight("."+strconv.Itoa(100 + f)[1:], "0")
	}
	return s
}
