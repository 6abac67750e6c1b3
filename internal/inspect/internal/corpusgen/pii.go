package main

import (
	"fmt"
	"strings"
)

// piiType is one synthesized personal-data format.
type piiType struct {
	name string
	key  string
	make func(g *gen) string
	// line puts the value in a sentence of tool output.
	line func(g *gen, v string) string
}

var firstNames = []string{"anna", "jonas", "maria", "li", "amir", "sofia", "kwame", "elena", "tomas", "yuki", "priya", "lucas"}
var lastNames = []string{"becker", "novak", "silva", "chen", "haddad", "rossi", "mensah", "ivanova", "kowalski", "tanaka", "sharma", "moreau"}
var mailDomains = []string{"mailbox-eu.net", "northwind-traders.co.uk", "acme-logistics.io", "kontor24.de", "fastpost.fr", "bluepeak.com.au", "contoso-health.org"}

func (g *gen) person() (string, string) {
	return g.pick(firstNames...), g.pick(lastNames...)
}

func (g *gen) card(prefix string, n int) string {
	p := prefix + g.str(digits, n-1-len(prefix))
	return p + string(luhnDigit(p))
}

func group(s string, sizes ...int) string {
	var parts []string
	for _, n := range sizes {
		parts = append(parts, s[:n])
		s = s[n:]
	}
	return strings.Join(parts, " ")
}

func (g *gen) iban(cc, bban string) string { return cc + ibanCheck(cc, bban) + bban }

func (g *gen) ninoPrefix() string {
	for {
		a := g.str("ABCEGHJKLMNOPRSTWXYZ", 1)
		b := g.str("ABCEGHJKLMNPRSTWXYZ", 1)
		switch a + b {
		case "BG", "GB", "NK", "KN", "TN", "NT", "ZZ":
			continue
		}
		return a + b
	}
}

func (g *gen) piiTypes() []piiType {
	sentence := func(label string) func(*gen, string) string {
		return func(g *gen, v string) string {
			f, l := g.person()
			return fmt.Sprintf("Customer record %s: %s %s, %s: %s, status active", g.str(digits, 5), capital(f), capital(l), label, v)
		}
	}
	return []piiType{
		{name: "email", key: "email", make: func(g *gen) string {
			f, l := g.person()
			return f + g.pick(".", "_", "") + l + g.pick("", g.str(digits, 2)) + "@" + g.pick(mailDomains...)
		}, line: sentence("e-mail")},
		{name: "phone-e164", key: "phone", make: func(g *gen) string {
			return g.pick("+4915"+g.str(digits, 9), "+447700"+g.str(digits, 6), "+3361"+g.str(digits, 7), "+8190"+g.str(digits, 8), "+61412"+g.str(digits, 6))
		}, line: sentence("phone")},
		{name: "phone-us", key: "phone_number", make: func(g *gen) string {
			area := g.str("23456789", 1) + g.str("012345678", 1) + g.str(digits, 1)
			ex := g.str("23456789", 1) + g.str(digits, 2)
			num := g.str(digits, 4)
			return g.pick("("+area+") "+ex+"-"+num, area+"-"+ex+"-"+num, "+1 "+area+" "+ex+" "+num)
		}, line: sentence("phone")},
		{name: "card-visa", key: "card_number", make: func(g *gen) string {
			c := g.card("4", 16)
			return g.pick(c, group(c, 4, 4, 4, 4), strings.ReplaceAll(group(c, 4, 4, 4, 4), " ", "-"))
		}, line: sentence("card")},
		{name: "card-mastercard", key: "pan", make: func(g *gen) string {
			c := g.card(g.pick("51", "52", "53", "54", "55", "2221", "2720"), 16)
			return g.pick(c, group(c, 4, 4, 4, 4))
		}, line: sentence("card")},
		{name: "card-amex", key: "card", make: func(g *gen) string {
			c := g.card(g.pick("34", "37"), 15)
			return g.pick(c, group(c, 4, 6, 5))
		}, line: sentence("card")},
		{name: "card-discover", key: "card_number", make: func(g *gen) string {
			c := g.card("6011", 16)
			return g.pick(c, group(c, 4, 4, 4, 4))
		}, line: sentence("card")},
		{name: "iban-de", key: "iban", make: func(g *gen) string {
			i := g.iban("DE", g.str(digits, 18))
			return g.pick(i, group(i, 4, 4, 4, 4, 4, 2))
		}, line: sentence("IBAN")},
		{name: "iban-gb", key: "iban", make: func(g *gen) string {
			i := g.iban("GB", g.str(upper, 4)+g.str(digits, 14))
			return g.pick(i, group(i, 4, 4, 4, 4, 4, 2))
		}, line: sentence("IBAN")},
		{name: "iban-fr", key: "bank_account", make: func(g *gen) string {
			return g.iban("FR", g.str(digits, 23))
		}, line: sentence("IBAN")},
		{name: "iban-nl", key: "iban", make: func(g *gen) string {
			return g.iban("NL", g.str(upper, 4)+g.str(digits, 10))
		}, line: sentence("IBAN")},
		{name: "us-ssn", key: "ssn", make: func(g *gen) string {
			area := 1 + g.r.IntN(665)
			if area == 666 {
				area = 667
			}
			return fmt.Sprintf("%03d-%02d-%04d", area, 1+g.r.IntN(99), 1+g.r.IntN(9999))
		}, line: sentence("SSN")},
		{name: "uk-nino", key: "national_insurance_number", make: func(g *gen) string {
			p := g.ninoPrefix()
			d := g.str(digits, 6)
			s := g.str("ABCD", 1)
			return g.pick(p+d+s, p+" "+d[:2]+" "+d[2:4]+" "+d[4:]+" "+s)
		}, line: sentence("NI number")},
	}
}

// capital upper-cases the first letter of an ASCII name.
func capital(s string) string { return strings.ToUpper(s[:1]) + s[1:] }
