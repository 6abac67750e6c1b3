package scan

import (
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

var testScanner = func() *Scanner {
	s, err := New(Options{})
	if err != nil {
		panic(err)
	}
	return s
}()

// rnd is a deterministic random string over alphabet (test values are
// generated, never real credentials).
func rnd(seed uint64, alphabet string, n int) string {
	r := rand.New(rand.NewPCG(seed, 7))
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(b)
}

const (
	alnum   = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	upper27 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	hexLow  = "0123456789abcdef"
	b64url  = alnum + "-_"
)

func ghToken(prefix string, seed uint64, valid bool) string {
	body := rnd(seed, alnum, 30)
	sum := githubChecksum(body)
	if !valid {
		sum = sum[:5] + string("0123456789"[(strings.IndexByte(base62, sum[5])+1)%10])
	}
	return prefix + body + sum
}

func jwtOf(header, payload string, sig string) string {
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(header)) + "." + enc.EncodeToString([]byte(payload)) + "." + sig
}

func pemOf(label string, seed uint64) string {
	body := rnd(seed, alnum+"+/", 64*5)
	var b strings.Builder
	b.WriteString("-----BEGIN " + label + "-----\n")
	for i := 0; i < len(body); i += 64 {
		b.WriteString(body[i:i+64] + "\n")
	}
	b.WriteString("-----END " + label + "-----")
	return b.String()
}

type scanCase struct {
	name string
	in   Input
	rule string     // "" for a negative
	conf Confidence // checked when rule != ""
	span string     // the exact text a redaction replaces
}

func secretPositives() []scanCase {
	aws := "AKIA" + rnd(1, upper27, 16)
	ghp := ghToken("ghp_", 2, true)
	ghpBad := ghToken("ghp_", 3, false)
	gho := ghToken("gho_", 4, true)
	fine := "github_pat_" + rnd(5, alnum+"_", 82)
	glpat := "glpat-" + rnd(6, alnum, 20)
	slack := "xoxb-3184759261-7719203845-" + rnd(7, alnum, 24)
	stripe := "sk_live_" + rnd(8, alnum, 24)
	openai := "sk-proj-" + rnd(9, b64url, 58) + "T3BlbkFJ" + rnd(10, b64url, 58)
	anthropic := "sk-ant-api03-" + rnd(11, b64url, 93) + "AA"
	npm := "npm_" + rnd(12, "abcdefghijklmnopqrstuvwxyz0123456789", 36)
	gcp := "AIza" + rnd(13, b64url, 35)
	sendgrid := "SG." + rnd(14, b64url, 22) + "." + rnd(15, b64url, 43)
	hf := "hf_" + rnd(16, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", 34)
	do := "dop_v1_" + rnd(17, hexLow, 64)
	rsa := pemOf("RSA PRIVATE KEY", 18)
	ossh := pemOf("OPENSSH PRIVATE KEY", 19)
	p8 := pemOf("PRIVATE KEY", 20)
	truncated := strings.SplitN(pemOf("EC PRIVATE KEY", 21), "-----END", 2)[0]
	fullPEM := pemOf("RSA PRIVATE KEY", 22)
	tailOnly := strings.TrimLeft(fullPEM[strings.Index(fullPEM, "-----BEGIN RSA PRIVATE KEY-----")+len("-----BEGIN RSA PRIVATE KEY-----"):], " \n")
	jwt := jwtOf(`{"alg":"HS256","typ":"JWT"}`, `{"sub":"1234567890","name":"A"}`, rnd(22, b64url, 43))
	jwtNone := jwtOf(`{"alg":"none"}`, `{"sub":"x"}`, "")
	bearer := rnd(23, alnum, 40)
	basic := base64.StdEncoding.EncodeToString([]byte("alice:Wond3rland!x"))
	keyed := rnd(24, alnum+"+/", 40)
	awsSecret := rnd(40, alnum+"+/", 41)
	generic := rnd(25, alnum, 24)
	return []scanCase{
		{"aws access key id", Input{Text: "export AWS_ACCESS_KEY_ID=" + aws + "\n"}, "aws-access-token", High, aws},
		{"github pat, checksum valid", Input{Text: "token: " + ghp}, "github-pat", High, ghp},
		{"github pat, checksum invalid", Input{Text: "token: " + ghpBad}, "github-pat", Medium, ghpBad},
		{"github oauth", Input{Text: `{"t":"` + gho + `"}`}, "github-oauth", High, gho},
		{"github fine-grained pat", Input{Text: fine}, "github-fine-grained-pat", High, fine},
		{"gitlab pat", Input{Text: "GITLAB_TOKEN=" + glpat}, "gitlab-pat", High, glpat},
		{"slack bot token", Input{Text: "slack " + slack + " ok"}, "slack-bot-token", High, slack},
		{"stripe live key", Input{Text: "key " + stripe + "\n"}, "stripe-access-token", High, stripe},
		{"openai project key", Input{Text: "OPENAI_API_KEY=" + openai}, "openai-api-key", High, openai},
		{"anthropic key", Input{Text: "x-api-key: " + anthropic + "\n"}, "anthropic-api-key", High, anthropic},
		{"npm token", Input{Text: "//registry.npmjs.org/:_authToken=" + npm + "\n"}, "npm-access-token", High, npm},
		{"gcp api key", Input{Text: "maps key " + gcp + " end"}, "gcp-api-key", High, gcp},
		{"sendgrid", Input{Text: "SENDGRID=" + sendgrid + "\n"}, "sendgrid-api-token", High, sendgrid},
		{"hugging face", Input{Text: "HF_TOKEN " + hf + "\n"}, "huggingface-access-token", High, hf},
		{"vault legacy service token", Input{Text: "VAULT_TOKEN=s." + rnd(41, alnum, 24) + "\n"}, "vault-service-token", High, "s." + rnd(41, alnum, 24)},
		{"vault service token", Input{Text: "token hvs." + rnd(42, alnum, 95) + " x"}, "vault-service-token", High, "hvs." + rnd(42, alnum, 95)},
		{"facebook token, provider named elsewhere", Input{Text: "facebook app credentials: 731946028517364|" + rnd(46, alnum, 30) + "\n"}, "facebook-access-token", Medium, "731946028517364|" + rnd(46, alnum, 30)},
		{"github app token (alternation prefix)", Input{Text: "GH_APP=" + ghToken("ghs_", 47, true) + "\n"}, "github-app-token", High, ghToken("ghs_", 47, true)},
		{"stripe restricted key", Input{Text: "STRIPE=rk_live_" + rnd(48, alnum, 24) + "\n"}, "stripe-access-token", High, "rk_live_" + rnd(48, alnum, 24)},
		{"heroku key is a uuid", Input{Text: "HEROKU_API_KEY=3f2b8c1e-9d4a-4e7b-8f6a-2c1d0e9b7a65\n"}, "heroku-api-key", Medium, "3f2b8c1e-9d4a-4e7b-8f6a-2c1d0e9b7a65"},
		{"digitalocean", Input{Text: "DO " + do + "\n"}, "digitalocean-pat", High, do},
		{"pem rsa private key", Input{Text: "key:\n" + rsa + "\nmore"}, RulePEMPrivateKey, High, rsa},
		{"openssh private key", Input{Text: ossh}, RuleOpenSSHPrivateKey, High, ossh},
		{"pkcs8 private key", Input{Text: "a " + p8 + " b"}, RulePEMPrivateKey, High, p8},
		{"truncated private key", Input{Text: truncated}, RulePEMPrivateKey, High, strings.TrimPrefix(truncated, "-----BEGIN EC PRIVATE KEY-----")},
		// The last lines of a key file (a tail): no BEGIN line.
		{"private key tail", Input{Text: "log\n" + tailOnly}, RulePEMPrivateKey, High, tailOnly},
		{"jwt signed", Input{Text: "id_token=" + jwt + "&x=1"}, RuleJWT, High, jwt},
		{"jwt unsigned", Input{Text: "t " + jwtNone + " "}, RuleJWT, Medium, jwtNone},
		{"url credentials", Input{Text: "DATABASE_URL=postgres://app:Xk9!mQ2v-77@db.internal:5432/app"}, RuleURLCredentials, High, "Xk9!mQ2v-77"},
		{"url credentials, empty user", Input{Text: "REDIS_URL=redis://:Qm7vX2pL9k@cache:6379/0"}, RuleURLCredentials, High, "Qm7vX2pL9k"},
		{"url credentials https", Input{Text: "clone https://bot:" + bearer + "@git.corp.example.net/r.git"}, RuleURLCredentials, High, bearer},
		{"bearer header", Input{Text: "Authorization: Bearer " + bearer}, RuleHTTPBearer, High, bearer},
		{"bearer bare", Input{Text: "use Bearer " + bearer + " to call"}, RuleHTTPBearer, Medium, bearer},
		{"basic header", Input{Text: "Authorization: Basic " + basic + "\r\n"}, RuleHTTPBasic, High, basic},
		{"keyed secret", Input{Key: "client_secret", Text: keyed}, RuleKeyedSecret, High, keyed},
		{"keyed AWS secret access key", Input{Key: "AWS_SECRET_ACCESS_KEY", Text: awsSecret}, RuleKeyedSecret, High, awsSecret},
		{"keyed token stays medium", Input{Key: "session_token", Text: keyed}, RuleKeyedSecret, Medium, keyed},
		{"keyed password", Input{Key: "db_password", Text: "hunter2!x"}, RuleKeyedSecret, Medium, "hunter2!x"},
		{"generic key=value", Input{Text: `db_secret = "` + generic + `"`}, "generic-api-key", Low, generic},
		{"kubernetes secret yaml", Input{Text: "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ndata:\n  password: " + base64.StdEncoding.EncodeToString([]byte(generic)) + "\n"}, "kubernetes-secret-yaml", High, "password: " + base64.StdEncoding.EncodeToString([]byte(generic))},
		{"generic json member", Input{Text: `{"auth_token": "` + generic + `"}`}, "generic-api-key", Low, generic},
	}
}

func secretNegatives() []scanCase {
	hex64 := rnd(30, hexLow, 64)
	png := "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
	return []scanCase{
		{"aws documentation key", Input{Text: "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE"}, "", "", ""},
		{"aws documentation secret", Input{Text: "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}, "", "", ""},
		{"your api key", Input{Text: `api_key = "YOUR_API_KEY_HERE"`}, "", "", ""},
		{"sk-xxxx", Input{Text: "OPENAI_API_KEY=sk-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}, "", "", ""},
		{"angle placeholder", Input{Text: "Authorization: Bearer <token>"}, "", "", ""},
		{"env reference", Input{Text: "token: ${GITHUB_TOKEN}"}, "", "", ""},
		{"actions secret", Input{Text: "password: ${{ secrets.DB_PASSWORD }}"}, "", "", ""},
		{"template", Input{Text: `"api_key": "{{ .Values.apiKey }}"`}, "", "", ""},
		{"repeated chars", Input{Text: `secret_key = "aaaaaaaaaaaaaaaaaaaaaaaa"`}, "", "", ""},
		{"ghp zeros", Input{Text: "ghp_000000000000000000000000000000000000"}, "", "", ""},
		{"uuid under secret key", Input{Key: "session_token", Text: "3f2b8c1e-9d4a-4e7b-8f6a-2c1d0e9b7a65"}, "", "", ""},
		{"uuid in text", Input{Text: `"session_key": "3f2b8c1e-9d4a-4e7b-8f6a-2c1d0e9b7a65"`}, "", "", ""},
		{"ulid under secret key", Input{Key: "request_token", Text: "01HGW2BX6Q9ZK3M8N4P7R5T2VA"}, "", "", ""},
		{"sha256 hex under key", Input{Key: "signature", Text: hex64}, "", "", ""},
		{"sha256 hex in text", Input{Text: `token_hash = "` + hex64 + `"`}, "", "", ""},
		{"md5 hex", Input{Key: "auth_digest", Text: rnd(31, hexLow, 32)}, "", "", ""},
		{"sha1 hex", Input{Text: `secret_sha = "` + rnd(32, hexLow, 40) + `"`}, "", "", ""},
		{"sha512 hex", Input{Key: "token_sha512", Text: rnd(33, hexLow, 128)}, "", "", ""},
		{"oci digest", Input{Key: "access_digest", Text: "sha256:" + hex64}, "", "", ""},
		{"integrity", Input{Text: `"auth_integrity": "sha512-` + base64.StdEncoding.EncodeToString([]byte(rnd(34, alnum, 64))) + `"`}, "", "", ""},
		{"integrity under key", Input{Key: "token_integrity", Text: "sha384-" + base64.StdEncoding.EncodeToString([]byte(rnd(35, alnum, 48)))}, "", "", ""},
		{"data image", Input{Key: "avatar_token", Text: "data:image/png;base64," + png}, "", "", ""},
		{"raw png base64", Input{Key: "secret_image", Text: png}, "", "", ""},
		{"png in text", Input{Text: `"secret_thumbnail": "` + png + `"`}, "", "", ""},
		{"prose bearer", Input{Text: "The bearer of this letter is a friend; the basic idea is simple."}, "", "", ""},
		{"prose key", Input{Text: "Use the key to open the door, then pass the token to the next player."}, "", "", ""},
		{"url placeholder password", Input{Text: "postgres://user:password@localhost/db and https://u:${DB_PASS}@h/x"}, "", "", ""},
		{"url without password", Input{Text: "https://github.com/a/b and ssh://git@github.com/x.git"}, "", "", ""},
		{"jwt-like bad header", Input{Text: "eyJub3Rqc29u." + rnd(36, b64url, 20) + "." + rnd(37, b64url, 20)}, "", "", ""},
		{"jwt header without alg", Input{Text: jwtOf(`{"typ":"JWT"}`, `{"a":1}`, rnd(38, b64url, 43))}, "", "", ""},
		{"certificate", Input{Text: strings.ReplaceAll(pemOf("CERTIFICATE", 39), "CERTIFICATE", "CERTIFICATE")}, "", "", ""},
		{"public key", Input{Text: pemOf("PUBLIC KEY", 40)}, "", "", ""},
		{"basic not credentials", Input{Text: "Authorization: Basic dGVzdGluZ3Rlc3Rpbmc="}, "", "", ""},
		{"vault-like, too long", Input{Text: "x s." + rnd(43, alnum, 25) + " y"}, "", "", ""},
		{"vault-like, inside a word", Input{Text: "xs." + rnd(44, alnum, 24) + " y"}, "", "", ""},
		{"vault-like, bad terminator", Input{Text: "s." + rnd(45, alnum, 24) + ".z"}, "", "", ""},
		{"version under key", Input{Key: "api_version", Text: "2024-10-01"}, "", "", ""},
		{"identifier under key", Input{Key: "token_type", Text: "refresh_token"}, "", "", ""},
		{"code", Input{Text: "func (k *keywords) each(text string, fn func(word, end int) bool) { token := lookupToken(secretName) }"}, "", "", ""},
	}
}

func checkCases(t *testing.T, cases []scanCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []Finding
			testScanner.Scan(tc.in, func(f Finding) { got = append(got, f) })
			if tc.rule == "" {
				for _, f := range got {
					t.Errorf("unexpected %s (%s) on %q", f.Rule, f.Confidence, tc.in.Text[f.Start:f.End])
				}
				return
			}
			for _, f := range got {
				if f.Rule == tc.rule {
					if f.Confidence != tc.conf {
						t.Errorf("confidence %s, want %s", f.Confidence, tc.conf)
					}
					if s := tc.in.Text[f.Start:f.End]; s != tc.span {
						t.Errorf("span %q, want %q", s, tc.span)
					}
					if len(tc.span) > 8 && strings.Contains(f.Excerpt, tc.span) {
						t.Errorf("excerpt %q holds the value", f.Excerpt)
					}
					return
				}
			}
			t.Errorf("no %s finding; got %+v", tc.rule, got)
		})
	}
}

func TestSecretPositives(t *testing.T) { checkCases(t, secretPositives()) }
func TestSecretNegatives(t *testing.T) { checkCases(t, secretNegatives()) }

func TestMask(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"AKIAZ3MSJV6WQAGIB7PK", "AKIA…(20)"},
		{"hunter2!", "hu…(8)"},
		{"abc", "…(3)"},
		{"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", "ghp_…(40)"},
		{"\n\n\n\nabcdefghijkl", "????…(16)"},
		{"ééééééééé", "éé…(9)"},
	} {
		if got := mask(tc.in); got != tc.want {
			t.Errorf("mask(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestGitHubChecksum(t *testing.T) {
	if !githubChecksumOK(ghToken("ghp_", 1, true)) || githubChecksumOK(ghToken("ghp_", 1, false)) {
		t.Fatal("checksum check wrong")
	}
	if githubChecksumOK("ghp_short") {
		t.Fatal("short token passes")
	}
}

// TestGitleaksRulesCompile: every rule of the embedded set compiles, and
// the set is the whole file less the path-only and superseded rules.
func TestGitleaksRulesCompile(t *testing.T) {
	rules, _, words, err := loadGitleaks()
	if err != nil {
		t.Fatal(err)
	}
	if len(rules) < 200 || len(rules) != len(words) {
		t.Fatalf("%d rules, %d keyword lists", len(rules), len(words))
	}
	for _, r := range rules {
		if r.check == checkAssign && (r.pre == nil || r.suf == nil) {
			t.Errorf("%s: semi-generic rule not split", r.id)
		}
	}
}

func FuzzScan(f *testing.F) {
	for _, c := range append(secretPositives(), secretNegatives()...) {
		f.Add(c.in.Text, c.in.Key)
	}
	for _, c := range piiCases() {
		f.Add(c.in.Text, c.in.Key)
	}
	f.Fuzz(func(t *testing.T, text, key string) {
		testScanner.Scan(Input{Text: text, Key: key}, func(fd Finding) {
			if fd.Start < 0 || fd.End > len(text) || fd.Start >= fd.End {
				t.Fatalf("%s: span [%d,%d) out of bounds (len %d)", fd.Rule, fd.Start, fd.End, len(text))
			}
			if !utf8.RuneStart(text[fd.Start]) || fd.End < len(text) && !utf8.RuneStart(text[fd.End]) {
				t.Fatalf("%s: span [%d,%d) not on UTF-8 boundaries", fd.Rule, fd.Start, fd.End)
			}
			if v := text[fd.Start:fd.End]; len(v) > 8 && strings.Contains(fd.Excerpt, v) {
				t.Fatalf("%s: excerpt %q holds the value", fd.Rule, fd.Excerpt)
			}
			if fd.Rule == "" || fd.Class == "" || fd.Confidence == "" {
				t.Fatalf("incomplete finding %+v", fd)
			}
		})
	})
}

// TestGitleaksRuleErrors: a rule that does not compile, or that would
// have to run on every string, is an error naming the rule.
func TestGitleaksRuleErrors(t *testing.T) {
	const q = "'''"
	for _, tc := range []struct{ name, src, want string }{
		{"bad regex", "[[rules]]\nid = \"broken-rule\"\nregex = " + q + "(unclosed" + q + "\nkeywords = [\"x\"]\n", `"broken-rule"`},
		{"no keywords, no prefix", "[[rules]]\nid = \"everywhere\"\nregex = " + q + "[a-z]{40}" + q + "\n", `"everywhere"`},
		{"secretGroup out of range", "[[rules]]\nid = \"grp\"\nregex = " + q + "ab(c)" + q + "\nsecretGroup = 3\nkeywords = [\"ab\"]\n", `"grp"`},
		{"bad allowlist", "[[rules]]\nid = \"al\"\nregex = " + q + "abc" + q + "\nkeywords = [\"abc\"]\n[[rules.allowlists]]\nregexes = [" + q + "(" + q + "]\n", `"al"`},
		{"not toml", "[[rules", "gitleaks rules"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, _, err := loadGitleaksFrom(tc.src)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one naming %s", err, tc.want)
			}
		})
	}
	// A rule without keywords but with a literal prefix uses the prefix.
	rules, _, words, err := loadGitleaksFrom("[[rules]]\nid = \"pfx\"\nregex = " + q + "tok_[a-z]{10}" + q + "\n")
	if err != nil || len(rules) != 1 || len(words[0]) != 1 || words[0][0] != "tok_" {
		t.Fatalf("prefix keyword: %v %v", words, err)
	}
}

// TestLowBudget: in a string made of nothing but generic assignments,
// at most lowBudgetFor(len) of them are reported (without the budget
// every one would be); a high-confidence token after them still is.
func TestLowBudget(t *testing.T) {
	var b strings.Builder
	n := 0
	for i := 0; b.Len() < 8<<10; i++ {
		n++
		b.WriteString("api_key = '" + rnd(uint64(100+i), alnum, 20) + "'\n")
	}
	aws := "AKIA" + rnd(2, upper27, 16)
	b.WriteString("aws " + aws + "\n")
	text := b.String()
	low, high := 0, 0
	testScanner.Scan(Input{Text: text}, func(f Finding) {
		switch f.Rule {
		case "generic-api-key":
			low++
		case "aws-access-token":
			high++
		}
	})
	// Each assignment is one candidate; a few fail entropy or
	// placeholder checks after taking their share of the budget.
	if want := lowBudgetFor(len(text)); low > want || low < want-want/8 || want >= n || high != 1 {
		t.Fatalf("generic findings %d (budget %d, assignments %d), aws %d (want 1)", low, want, n, high)
	}
}

// TestScanConcurrent: one Scanner used from several goroutines finds
// what it finds serially (run with -race).
func TestScanConcurrent(t *testing.T) {
	cases := append(append(secretPositives(), secretNegatives()...), piiCases()...)
	want := make([][]Finding, len(cases))
	for i, c := range cases {
		testScanner.Scan(c.in, func(f Finding) { want[i] = append(want[i], f) })
	}
	done := make(chan error)
	for g := 0; g < 4; g++ {
		go func() {
			for r := 0; r < 5; r++ {
				for i, c := range cases {
					var got []Finding
					testScanner.Scan(c.in, func(f Finding) { got = append(got, f) })
					if len(got) != len(want[i]) {
						done <- fmt.Errorf("%s: %d findings, serially %d", c.name, len(got), len(want[i]))
						return
					}
					for j := range got {
						if got[j] != want[i][j] {
							done <- fmt.Errorf("%s: %+v, serially %+v", c.name, got[j], want[i][j])
							return
						}
					}
				}
			}
			done <- nil
		}()
	}
	for g := 0; g < 4; g++ {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// TestTokenAround: the remembered run gives the windows a fresh scan
// gives, for hits in order of end offset in short and over-long tokens.
func TestTokenAround(t *testing.T) {
	fresh := func(text string, start, end int) (int, int) {
		ws := start
		for lim := max(0, start-512); ws > lim && !isSpace(text[ws-1]); ws-- {
		}
		we := end
		for lim := min(len(text), end+512); we < lim && !isSpace(text[we]); we++ {
		}
		return max(0, ws-1), min(len(text), we+1)
	}
	text := "a ghp_x ghp_ghp_ y " + strings.Repeat("ghp_", 400) + " z " + strings.Repeat("q", 700) + "ghp_" + strings.Repeat("r", 30) + "ghp_"
	var sc secretScratch
	k := newKeywords([]string{"ghp_", "p_"})
	k.each(text, func(w, end int) bool {
		start := end - []int{4, 2}[w]
		gs, ge := sc.tokenAround(text, start, end)
		ws, we := fresh(text, start, end)
		if gs != ws || ge != we {
			t.Fatalf("hit [%d,%d): window [%d,%d), fresh [%d,%d)", start, end, gs, ge, ws, we)
		}
		return true
	})
}

// TestContextOnlyMatch: a rule whose regex also matches a bare shape near
// the provider's name (sourcegraph-access-token: 40 hex digits near
// "sourcegraph") does not redact a git commit hash in a listing of the
// provider's repository (a fresh user's GitHub API commit list lost every
// sha); the provider's own prefixed token is still high.
func TestContextOnlyMatch(t *testing.T) {
	sc, err := New(Options{NoPII: true, NoInjection: true})
	if err != nil {
		t.Fatal(err)
	}
	sha := "9fceb02d0ae598e95dc970b74767f19372d61af8"
	var got []Finding
	sc.Scan(Input{Text: `{"repo":"sourcegraph/conc","sha":"` + sha + `"}`}, func(f Finding) { got = append(got, f) })
	for _, f := range got {
		if f.Confidence != Low && f.Rule == "sourcegraph-access-token" {
			t.Errorf("a commit hash near \"sourcegraph\": %s %s", f.Rule, f.Confidence)
		}
	}
	tok := "sgp_" + "a3f9c2e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a3f2"
	got = nil
	sc.Scan(Input{Text: "SRC_ACCESS_TOKEN=" + tok}, func(f Finding) { got = append(got, f) })
	high := false
	for _, f := range got {
		if f.Rule == "sourcegraph-access-token" && f.Confidence == High {
			high = true
		}
	}
	if !high {
		t.Errorf("a prefixed Sourcegraph token: findings %+v, want sourcegraph-access-token high", got)
	}
}
