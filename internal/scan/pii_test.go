package scan

import "testing"

// verhoeffComplete appends the Verhoeff check digit to digits.
func verhoeffComplete(digits string) string {
	for d := byte('0'); d <= '9'; d++ {
		if verhoeffOK(digits + string(d)) {
			return digits + string(d)
		}
	}
	panic("no check digit")
}

func piiCases() []scanCase {
	a := verhoeffComplete("23456789012")
	aSpaced := a[:4] + " " + a[4:8] + " " + a[8:]
	aBad := a[:11] + string('0'+(a[11]-'0'+1)%10)
	return []scanCase{
		{"email", Input{Text: "write to jane.doe+mcp@acme-corp.io today"}, RuleEmail, High, "jane.doe+mcp@acme-corp.io"},
		{"email in json", Input{Text: `{"owner":"r.smith@mail.co.uk"}`}, RuleEmail, High, "r.smith@mail.co.uk"},
		{"phone e164", Input{Text: "call +14155552671 now"}, RulePhone, Medium, "+14155552671"},
		{"phone e164 spaced", Input{Text: "tel +44 20 7946 0958."}, RulePhone, Medium, "+44 20 7946 0958"},
		{"phone e164 with parenthesized area", Input{Text: "call +1 (415) 555-2671."}, RulePhone, Medium, "+1 (415) 555-2671"},
		{"phone nanp", Input{Text: "phone: (415) 555-2671"}, RulePhone, Medium, "(415) 555-2671"},
		{"phone nanp dashes", Input{Text: "reach 415-555-2671 anytime"}, RulePhone, Low, "415-555-2671"},
		{"phone uk national", Input{Text: "Mobile: 07700 900123"}, RulePhone, Medium, "07700 900123"},
		{"card visa spaced", Input{Text: "card 4539 1488 0343 6467 exp"}, RuleCard, High, "4539 1488 0343 6467"},
		{"card mastercard dashes", Input{Text: "5555-5555-5555-4444"}, RuleCard, High, "5555-5555-5555-4444"},
		{"card amex plain", Input{Text: `"pan":"378282246310005"`}, RuleCard, High, "378282246310005"},
		{"ssn", Input{Text: "id 536-90-4399 on file"}, RuleUSSSN, Medium, "536-90-4399"},
		{"ssn with context", Input{Text: "SSN: 536-90-4399"}, RuleUSSSN, High, "536-90-4399"},
		{"nino", Input{Text: "NI number AB123456C."}, RuleUKNINO, Medium, "AB123456C"},
		{"dni", Input{Text: "DNI 12345678Z"}, RuleESDNI, High, "12345678Z"},
		{"nie", Input{Text: "titular X1234567L"}, RuleESDNI, Medium, "X1234567L"},
		{"bsn", Input{Text: "BSN: 111222333"}, RuleNLBSN, High, "111222333"},
		{"aadhaar spaced", Input{Text: "uid " + aSpaced}, RuleINAadhaar, Medium, aSpaced},
		{"aadhaar plain with context", Input{Text: "Aadhaar " + a}, RuleINAadhaar, High, a},
		{"iban spaced", Input{Text: "IBAN DE89 3704 0044 0532 0130 00 please"}, RuleIBAN, High, "DE89 3704 0044 0532 0130 00"},
		{"iban gb", Input{Text: "to GB82WEST12345698765432"}, RuleIBAN, High, "GB82WEST12345698765432"},
		{"iban nl", Input{Text: "NL91ABNA0417164300"}, RuleIBAN, High, "NL91ABNA0417164300"},
		// hard negatives
		{"email documentation domain", Input{Text: "user@example.com and a@b.example.org"}, "", "", ""},
		{"email image name", Input{Text: "icon@2x.png logo@3x.jpg"}, "", "", ""},
		{"scp-like ssh target", Input{Text: "origin git@github.com:gatehouse-mcp/gatehouse.git (fetch)"}, "", "", ""},
		{"email before a colon and port-like digits", Input{Text: "mail ops@corp-mail.net:25 relay"}, RuleEmail, High, "ops@corp-mail.net"},
		{"npm scope", Input{Text: "import x from '@types/node'"}, "", "", ""},
		{"date", Input{Text: "on 2024-01-15 at 10:30:00"}, "", "", ""},
		{"timestamp", Input{Text: "ts=1701388800 ms=1701388800123"}, "", "", ""},
		{"version", Input{Text: "version 1.22.3 and v10.4.12"}, "", "", ""},
		{"ip", Input{Text: "from 192.168.100.200 port 8080"}, "", "", ""},
		{"digit id", Input{Text: "order 7312938712938713 id 123456789"}, "", "", ""},
		{"card luhn fails", Input{Text: "4539 1488 0343 6468"}, "", "", ""},
		{"card test repeated", Input{Text: "4111 1111 1111 1111"}, "", "", ""},
		{"ssn invalid area", Input{Text: "000-12-3456 666-12-3456 912-34-5678 123-00-4567"}, "", "", ""},
		{"nino invalid", Input{Text: "BG123456C AB123456E"}, "", "", ""},
		{"dni wrong letter", Input{Text: "12345678A"}, "", "", ""},
		{"bsn without context", Input{Text: "111222333"}, "", "", ""},
		{"aadhaar bad check", Input{Text: "uid " + aBad[:4] + " " + aBad[4:8] + " " + aBad[8:]}, "", "", ""},
		{"iban bad check", Input{Text: "DE89 3704 0044 0532 0130 01"}, "", "", ""},
		{"hex digest", Input{Text: "sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}, "", "", ""},
		{"uuid", Input{Text: "id 3f2b8c1e-9d4a-4e7b-8f6a-2c1d0e9b7a65"}, "", "", ""},
		{"parenthesized number in prose", Input{Text: "see page 1 (2024) and item 12 (3)"}, "", "", ""},
		{"plain digits", Input{Text: "count 4155552671 rows"}, "", "", ""},
	}
}

func TestPII(t *testing.T) { checkCases(t, piiCases()) }

func TestPIISkip(t *testing.T) {
	for _, tc := range []struct {
		text string
		from int
		want int
	}{
		{"", 0, 0},
		{"abcdefghijklmnop", 0, 16},
		{"abcdefgh1", 0, 8},
		{"abcdefghijk@m", 0, 11},
		{"a0", 0, 1},
		{"\x80\xff\xc3\xa9/ABCDEFG9", 0, 12},
		{"9abcdefghij", 1, 11},
		{"abc:defgh", 0, 3},
	} {
		if got := piiSkip(tc.text, tc.from); got != tc.want {
			t.Errorf("piiSkip(%q, %d) = %d, want %d", tc.text, tc.from, got, tc.want)
		}
	}
	// Against the byte-by-byte definition, for every byte value.
	for b := 0; b < 256; b++ {
		s := "xxxxxxxxxx" + string([]byte{byte(b)}) + "xxxxxxxx"
		want := len(s)
		if b >= 0x30 && b <= 0x40 {
			want = 10
		}
		if got := piiSkip(s, 0); got != want {
			t.Errorf("byte %#x: got %d, want %d", b, got, want)
		}
	}
}

// TestPIIModes: personal data is looked for in data, not in tool
// definitions (ModeToolDefinition is poisoning and secrets); secrets are
// looked for in both.
func TestPIIModes(t *testing.T) {
	text := "mail jane.doe@acme-corp.io, key AKIA" + rnd(1, upper27, 16)
	count := func(m Mode) map[Class]int {
		c := map[Class]int{}
		testScanner.Scan(Input{Text: text, Mode: m}, func(f Finding) { c[f.Class]++ })
		return c
	}
	if c := count(ModeData); c[ClassPII] != 1 || c[ClassSecret] != 1 {
		t.Errorf("ModeData: %v", c)
	}
	if c := count(ModeToolDefinition); c[ClassPII] != 0 || c[ClassSecret] != 1 {
		t.Errorf("ModeToolDefinition: %v", c)
	}
}
