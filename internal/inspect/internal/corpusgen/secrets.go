package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
)

// secretType is one synthesized credential format.
type secretType struct {
	name string
	// key is the member name a tool would put the value under.
	key string
	// make returns a fresh format-valid value.
	make func(g *gen) string
	// line is how the value appears in text output ("" = key=value).
	line func(g *gen, v string) string
	// planted is what the record's "value" holds (default: v).
	planted func(v string) string
	// encodable: base64/hex/percent forms apply.
	encodable bool
}

func envLine(name string) func(*gen, string) string {
	return func(_ *gen, v string) string { return name + "=" + v }
}

func (g *gen) ghToken(prefix string) string {
	r := g.str(base62, 30)
	return prefix + r + ghChecksum(r)
}

func (g *gen) secretTypes() []secretType {
	return []secretType{
		{name: "aws-access-key", key: "aws_access_key_id", make: func(g *gen) string {
			return g.pick("AKIA", "ASIA") + g.str(b32Upper, 16)
		}, line: envLine("AWS_ACCESS_KEY_ID"), encodable: true},
		{name: "aws-secret-key", key: "aws_secret_access_key", make: func(g *gen) string {
			return g.str(alnum+"+/", 40)
		}, line: envLine("aws_secret_access_key = "), encodable: true},
		{name: "github-pat", key: "github_token", make: func(g *gen) string { return g.ghToken("ghp_") }, line: envLine("GITHUB_TOKEN"), encodable: true},
		{name: "github-oauth-token", key: "oauth_token", make: func(g *gen) string { return g.ghToken("gho_") }, line: func(_ *gen, v string) string { return "oauth_token: " + v }, encodable: true},
		{name: "github-app-token", key: "installation_token", make: func(g *gen) string { return g.ghToken(g.pick("ghs_", "ghu_")) }, line: func(_ *gen, v string) string { return "token " + v }, encodable: true},
		{name: "github-fine-grained-pat", key: "GH_TOKEN", make: func(g *gen) string {
			return "github_pat_11" + g.str(upper+digits, 20) + "_" + g.str(alnum, 59)
		}, line: envLine("GH_TOKEN"), encodable: true},
		{name: "gitlab-pat", key: "gitlab_token", make: func(g *gen) string { return "glpat-" + g.str(wordDash, 20) }, line: envLine("GITLAB_TOKEN"), encodable: true},
		{name: "stripe-secret", key: "stripe_secret_key", make: func(g *gen) string { return g.pick("sk_live_", "sk_test_") + g.str(alnum, 99) }, line: envLine("STRIPE_SECRET_KEY"), encodable: true},
		{name: "stripe-restricted-key", key: "stripe_key", make: func(g *gen) string { return "rk_live_" + g.str(alnum, 99) }, line: func(_ *gen, v string) string { return "stripe.api_key = '" + v + "'" }, encodable: true},
		{name: "slack-bot-token", key: "slack_bot_token", make: func(g *gen) string {
			return "xoxb-" + g.str(digits, 12) + "-" + g.str(digits, 13) + "-" + g.str(alnum, 24)
		}, line: envLine("SLACK_BOT_TOKEN"), encodable: true},
		{name: "slack-user-token", key: "slack_token", make: func(g *gen) string {
			return "xoxp-" + g.str(digits, 12) + "-" + g.str(digits, 12) + "-" + g.str(digits, 13) + "-" + g.str(hexLower, 32)
		}, line: envLine("SLACK_USER_TOKEN"), encodable: true},
		{name: "slack-webhook-url", key: "webhook_url", make: func(g *gen) string {
			return "https://hooks.slack.com/services/T" + g.str(upper+digits, 10) + "/B" + g.str(upper+digits, 10) + "/" + g.str(alnum, 24)
		}, line: func(_ *gen, v string) string { return "notify: " + v }},
		{name: "openai-key", key: "OPENAI_API_KEY", make: func(g *gen) string {
			return "sk-proj-" + g.str(wordDash, 74) + "T3BlbkFJ" + g.str(wordDash, 74)
		}, line: envLine("OPENAI_API_KEY"), encodable: true},
		{name: "anthropic-key", key: "ANTHROPIC_API_KEY", make: func(g *gen) string {
			return "sk-ant-api03-" + g.str(wordDash, 93) + "AA"
		}, line: envLine("ANTHROPIC_API_KEY"), encodable: true},
		{name: "npm-token", key: "npm_token", make: func(g *gen) string { return g.ghToken("npm_") }, line: func(_ *gen, v string) string { return "//registry.npmjs.org/:_authToken=" + v }, encodable: true},
		{name: "pypi-token", key: "pypi_token", make: func(g *gen) string {
			return "pypi-AgEIcHlwaS5vcmc" + g.str(wordDash, 140)
		}, line: func(_ *gen, v string) string { return "[pypi]\nusername = __token__\npassword = " + v }, encodable: true},
		{name: "gcp-api-key", key: "google_api_key", make: func(g *gen) string { return "AIza" + g.str(wordDash, 35) }, line: envLine("GOOGLE_API_KEY"), encodable: true},
		{name: "gcp-service-account-key", key: "credentials_json", make: func(g *gen) string {
			project := g.pick("billing", "analytics", "ingest", "ml") + "-" + g.str(lowAlnum, 6)
			der := append([]byte{0x30, 0x82, 0x04, 0xbe, 0x02, 0x01, 0x00, 0x30, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01, 0x05, 0x00, 0x04, 0x82, 0x04, 0xa8}, g.bytes(1192)...)
			key := map[string]string{
				"type":           "service_account",
				"project_id":     project,
				"private_key_id": g.str(hexLower, 40),
				"private_key":    pem("PRIVATE KEY", der),
				"client_email":   "deployer@" + project + ".iam.gserviceaccount.com",
				"client_id":      g.str(digits, 21),
				"token_uri":      "https://oauth2.googleapis.com/token",
			}
			b, _ := json.MarshalIndent(key, "", "  ")
			return string(b)
		}, line: func(_ *gen, v string) string { return v }, planted: func(v string) string {
			var m map[string]string
			_ = json.Unmarshal([]byte(v), &m)
			return pemLine(m["private_key"])
		}},
		{name: "azure-storage-key", key: "AZURE_STORAGE_CONNECTION_STRING", make: func(g *gen) string {
			return "DefaultEndpointsProtocol=https;AccountName=" + g.str(lowAlnum, 12) + ";AccountKey=" + base64.StdEncoding.EncodeToString(g.bytes(64)) + ";EndpointSuffix=core.windows.net"
		}, line: envLine("AZURE_STORAGE_CONNECTION_STRING"), planted: func(v string) string {
			i := strings.Index(v, "AccountKey=")
			return strings.TrimSuffix(v[i+len("AccountKey="):], ";EndpointSuffix=core.windows.net")
		}},
		{name: "pem-rsa-private-key", key: "private_key", make: func(g *gen) string {
			der := append([]byte{0x30, 0x82, 0x04, 0xa4, 0x02, 0x01, 0x00, 0x02, 0x82, 0x01, 0x01, 0x00}, g.bytes(1180)...)
			return pem("RSA PRIVATE KEY", der)
		}, line: func(_ *gen, v string) string { return "$ cat deploy.pem\n" + v }, planted: pemLine},
		{name: "pem-ec-private-key", key: "signing_key", make: func(g *gen) string {
			der := append([]byte{0x30, 0x77, 0x02, 0x01, 0x01, 0x04, 0x20}, g.bytes(32)...)
			der = append(der, 0xa0, 0x0a, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0xa1, 0x44, 0x03, 0x42, 0x00, 0x04)
			der = append(der, g.bytes(64)...)
			return pem("EC PRIVATE KEY", der)
		}, line: func(_ *gen, v string) string { return v }, planted: pemLine},
		{name: "openssh-private-key", key: "ssh_private_key", make: func(g *gen) string {
			der := append([]byte("openssh-key-v1\x00\x00\x00\x00\x04none\x00\x00\x00\x04none\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x33\x00\x00\x00\x0bssh-ed25519\x00\x00\x00\x20"), g.bytes(300)...)
			s := base64.StdEncoding.EncodeToString(der)
			var b strings.Builder
			b.WriteString("-----BEGIN OPENSSH PRIVATE KEY-----\n")
			for len(s) > 70 {
				b.WriteString(s[:70] + "\n")
				s = s[70:]
			}
			b.WriteString(s + "\n-----END OPENSSH PRIVATE KEY-----\n")
			return b.String()
		}, line: func(_ *gen, v string) string { return "~/.ssh/id_ed25519:\n" + v }, planted: pemLine},
		{name: "jwt", key: "id_token", make: func(g *gen) string {
			h := b64url([]byte(`{"alg":"` + g.pick("HS256", "RS256", "ES256") + `","typ":"JWT"}`))
			p := b64url([]byte(fmt.Sprintf(`{"sub":"user-%s","iat":%d,"exp":%d,"scope":"read write"}`, g.str(digits, 6), 1764000000+g.r.IntN(1e6), 1765000000+g.r.IntN(1e6))))
			return h + "." + p + "." + b64url(g.bytes(32))
		}, line: func(_ *gen, v string) string { return "session cookie: " + v }, encodable: true},
		{name: "url-credentials", key: "database_url", make: func(g *gen) string {
			return g.pick("postgres", "mysql", "mongodb", "redis", "amqp") + "://" + g.pick("app", "admin", "svc_ingest", "deploy") + ":" + g.str(alnum, 12) + g.pick("!", "~", "") + g.str(alnum, 8) + "@" + g.pick("db", "cache", "mq") + "-" + g.str(lowAlnum, 5) + ".internal:" + g.pick("5432", "3306", "27017", "6379", "5672") + "/" + g.pick("prod", "app", "0")
		}, line: envLine("DATABASE_URL"), planted: func(v string) string {
			s := v[strings.Index(v, "://")+3:]
			s = s[strings.Index(s, ":")+1:]
			return s[:strings.LastIndex(s, "@")]
		}},
		{name: "bearer-header", key: "Authorization", make: func(g *gen) string {
			return "Bearer " + g.str(alnum, 24) + "." + g.str(wordDash, 40)
		}, line: func(_ *gen, v string) string {
			return "> GET /v1/accounts HTTP/1.1\n> Host: api.internal\n> Authorization: " + v + "\n> Accept: */*"
		}, planted: func(v string) string { return strings.TrimPrefix(v, "Bearer ") }},
		{name: "basic-header", key: "Authorization", make: func(g *gen) string {
			return "Basic " + b64(g.pick("admin", "ci", "jenkins", "backup")+":"+g.str(alnum, 14)+g.pick("$", "%", "9"))
		}, line: func(_ *gen, v string) string {
			return "curl -H 'Authorization: " + v + "' https://artifacts.internal/api"
		}, planted: func(v string) string { return strings.TrimPrefix(v, "Basic ") }},
		{name: "generic-password", key: "db_password", make: func(g *gen) string {
			return g.str(alnum, 6) + g.pick("#", "!", "@", "%", "&") + g.str(alnum, 5) + g.pick("$", "*", "^") + g.str(alnum, 4)
		}, line: func(_ *gen, v string) string { return "DB_PASSWORD=" + v }, encodable: true},
		{name: "generic-api-secret", key: "client_secret", make: func(g *gen) string { return g.str(alnum, 40) }, line: func(_ *gen, v string) string { return "client_secret: \"" + v + "\"" }, encodable: true},
		{name: "sendgrid-key", key: "sendgrid_api_key", make: func(g *gen) string { return "SG." + g.str(wordDash, 22) + "." + g.str(wordDash, 43) }, line: envLine("SENDGRID_API_KEY"), encodable: true},
		{name: "twilio-api-key", key: "twilio_api_key", make: func(g *gen) string { return "SK" + g.str(hexLower, 32) }, line: envLine("TWILIO_API_KEY"), encodable: true},
		{name: "shopify-token", key: "shopify_access_token", make: func(g *gen) string { return "shpat_" + g.str(hexLower, 32) }, line: envLine("SHOPIFY_ACCESS_TOKEN"), encodable: true},
		{name: "digitalocean-pat", key: "do_token", make: func(g *gen) string { return "dop_v1_" + g.str(hexLower, 64) }, line: envLine("DIGITALOCEAN_TOKEN"), encodable: true},
		{name: "huggingface-token", key: "hf_token", make: func(g *gen) string { return "hf_" + g.str(upper+lower, 34) }, line: envLine("HF_TOKEN"), encodable: true},
		{name: "databricks-token", key: "databricks_token", make: func(g *gen) string { return "dapi" + g.str(hexLower, 32) }, line: envLine("DATABRICKS_TOKEN"), encodable: true},
		{name: "postman-key", key: "postman_api_key", make: func(g *gen) string { return "PMAK-" + g.str(hexLower, 24) + "-" + g.str(hexLower, 34) }, line: envLine("POSTMAN_API_KEY"), encodable: true},
		{name: "age-secret-key", key: "age_secret_key", make: func(g *gen) string { return "AGE-SECRET-KEY-1" + g.str(bech32Up, 58) }, line: func(_ *gen, v string) string {
			return "# created: 2026-11-02T10:11:12Z\n# public key: age1" + strings.ToLower(v[16:40]) + "\n" + v
		}, encodable: true},
		{name: "linear-key", key: "linear_api_key", make: func(g *gen) string { return "lin_api_" + g.str(alnum, 40) }, line: envLine("LINEAR_API_KEY"), encodable: true},
		{name: "doppler-token", key: "doppler_token", make: func(g *gen) string { return "dp.pt." + g.str(alnum, 43) }, line: envLine("DOPPLER_TOKEN"), encodable: true},
		{name: "grafana-sa-token", key: "grafana_token", make: func(g *gen) string { return "glsa_" + g.str(alnum, 32) + "_" + g.str(hexLower, 8) }, line: envLine("GRAFANA_TOKEN"), encodable: true},
		{name: "pulumi-token", key: "pulumi_access_token", make: func(g *gen) string { return "pul-" + g.str(hexLower, 40) }, line: envLine("PULUMI_ACCESS_TOKEN"), encodable: true},
		{name: "heroku-key", key: "heroku_api_key", make: func(g *gen) string { return "HRKU-AA" + g.str(wordDash, 58) }, line: envLine("HEROKU_API_KEY"), encodable: true},
		{name: "square-token", key: "square_access_token", make: func(g *gen) string { return "EAAA" + g.str(wordDash, 60) }, line: envLine("SQUARE_ACCESS_TOKEN"), encodable: true},
		{name: "telegram-bot-token", key: "telegram_bot_token", make: func(g *gen) string { return g.str(digits, 10) + ":AA" + g.str(wordDash, 33) }, line: envLine("TELEGRAM_BOT_TOKEN"), encodable: true},
		{name: "mailchimp-key", key: "mailchimp_api_key", make: func(g *gen) string { return g.str(hexLower, 32) + "-us" + g.str(digits, 2) }, line: envLine("MAILCHIMP_API_KEY"), encodable: true},
		{name: "dynatrace-token", key: "dynatrace_api_token", make: func(g *gen) string { return "dt0c01." + g.str(upper+digits, 24) + "." + g.str(upper+digits, 64) }, line: envLine("DT_API_TOKEN"), encodable: true},
		{name: "terraform-cloud-token", key: "tfe_token", make: func(g *gen) string { return g.str(alnum, 14) + ".atlasv1." + g.str(alnum, 67) }, line: func(_ *gen, v string) string { return "credentials \"app.terraform.io\" {\n  token = \"" + v + "\"\n}" }, encodable: true},
		{name: "planetscale-password", key: "planetscale_password", make: func(g *gen) string { return "pscale_pw_" + g.str(wordDash, 43) }, line: envLine("PLANETSCALE_PASSWORD"), encodable: true},
		{name: "sentry-token", key: "sentry_auth_token", make: func(g *gen) string { return "sntryu_" + g.str(hexLower, 64) }, line: envLine("SENTRY_AUTH_TOKEN"), encodable: true},
	}
}
