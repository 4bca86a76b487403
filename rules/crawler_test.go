package rules

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
)

func TestMatchCrawler(t *testing.T) {
	caught := []struct{ name, ua, token string }{
		{"GPTBot", "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)", "GPTBot"},
		{"ChatGPT-User", "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; ChatGPT-User/1.0; +https://openai.com/bot", "ChatGPT-User"},
		{"OAI-SearchBot", "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; OAI-SearchBot/1.0; +https://openai.com/searchbot", "OAI-SearchBot"},
		{"ChatGPT Agent", "Mozilla/5.0 (compatible; ChatGPT Agent/1.0)", "ChatGPT Agent"},
		{"ClaudeBot", "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; +claudebot@anthropic.com)", "ClaudeBot"},
		{"Claude-User", "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Claude-User/1.0; +Claude-User@anthropic.com)", "Claude-User"},
		{"Claude-SearchBot", "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Claude-SearchBot/1.0; +Claude-SearchBot@anthropic.com)", "Claude-SearchBot"},
		{"anthropic-ai", "anthropic-ai", "anthropic-ai"},
		{"CCBot", "CCBot/2.0 (https://commoncrawl.org/faq/)", "CCBot"},
		{"PerplexityBot", "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; PerplexityBot/1.0; +https://perplexity.ai/perplexitybot)", "PerplexityBot"},
		{"Perplexity-User", "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Perplexity-User/1.0; +https://perplexity.ai/perplexity-user)", "Perplexity-User"},
		{"Bytespider", "Mozilla/5.0 (Linux; Android 5.0) AppleWebKit/537.36 (KHTML, like Gecko) Mobile Safari/537.36 (compatible; Bytespider; spider-feedback@bytedance.com)", "Bytespider"},
		{"Amazonbot", "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/13.1.2 Safari/605.1.15 (Amazonbot/0.1; +https://developer.amazon.com/support/amazonbot)", "Amazonbot"},
		{"meta-externalagent", "meta-externalagent/1.1 (+https://developers.facebook.com/docs/sharing/webmasters/crawler)", "meta-externalagent"},
		{"meta-externalfetcher", "meta-externalfetcher/1.1 (+https://developers.facebook.com/docs/sharing/webmasters/crawler)", "meta-externalfetcher"},
		{"Meta-ExternalAgent mixed case", "Meta-ExternalAgent/1.1", "meta-externalagent"},
		{"Applebot-Extended", "Mozilla/5.0 (compatible; Applebot-Extended/0.1; +http://www.apple.com/go/applebot)", "Applebot-Extended"},
		{"Google-Extended", "Google-Extended", "Google-Extended"},
		{"GoogleAgent-URLContext", "Mozilla/5.0 (compatible; GoogleAgent-URLContext)", "GoogleAgent-URLContext"},
		{"cohere-ai", "Mozilla/5.0 (compatible; cohere-ai)", "cohere-ai"},
		{"Diffbot", "Mozilla/5.0 (X11; U; Linux x86_64; en-US) AppleWebKit/534.16 (KHTML, like Gecko) Chrome/10.0.648.205 Safari/534.16 Diffbot/0.1", "Diffbot"},
		{"YouBot", "Mozilla/5.0 (compatible; YouBot (+http://www.you.com))", "YouBot"},
		{"DuckAssistBot", "DuckAssistBot/1.2; (+http://duckduckgo.com/duckassistbot.html)", "DuckAssistBot"},
		{"MistralAI-User", "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; MistralAI-User/1.0; +https://docs.mistral.ai/robots)", "MistralAI-User"},
		{"Timpibot", "Timpibot/0.8 (+http://www.timpi.io)", "Timpibot"},
		{"ImagesiftBot", "Mozilla/5.0 (compatible; ImagesiftBot; +imagesift.com)", "ImagesiftBot"},
		{"omgili", "omgili/0.5 +http://omgili.com", "omgili"},
		{"Kangaroo Bot", "Mozilla/5.0 (compatible; Kangaroo Bot/1.0)", "Kangaroo Bot"},
		{"bigsur.ai", "Mozilla/5.0 (compatible; bigsur.ai/1.0)", "bigsur.ai"},
		{"iaskspider", "Mozilla/5.0 (compatible; iaskspider/2.0; +https://iask.ai)", "iaskspider"},
		{"Claude-Code", "claude-code/1.0.44", "Claude-Code"},
		{"all upper case", "GPTBOT/1.0", "GPTBot"},
		{"all lower case", "gptbot", "GPTBot"},
		{"token at the very end", "Mozilla/5.0 CCBot", "CCBot"},
		{"token between tabs", "x\tCCBot\ty", "CCBot"},
	}
	for _, tc := range caught {
		t.Run("caught/"+tc.name, func(t *testing.T) {
			tok, ok := MatchCrawler([]byte(tc.ua))
			if !ok || tok != tc.token {
				t.Errorf("MatchCrawler(%q) = %q, %v; want %q", tc.ua, tok, ok, tc.token)
			}
		})
	}

	passed := []struct{ name, ua string }{
		{"Chrome", "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36"},
		{"Chrome Android", "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Mobile Safari/537.36"},
		{"Firefox", "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"},
		{"Firefox Windows", "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:128.0) Gecko/20100101 Firefox/128.0"},
		{"Safari", "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15"},
		{"Safari iPhone", "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1"},
		{"Edge", "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36 Edg/126.0.2592.87"},
		{"Samsung Internet", "Mozilla/5.0 (Linux; Android 14; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/25.0 Chrome/121.0.0.0 Mobile Safari/537.36"},
		{"Googlebot", "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"},
		{"Googlebot smartphone", "Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.6478.126 Mobile Safari/537.36 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"},
		{"Googlebot-Image", "Googlebot-Image/1.0"},
		{"Google-InspectionTool", "Mozilla/5.0 (compatible; Google-InspectionTool/1.0;)"},
		{"GoogleOther", "Mozilla/5.0 (compatible; GoogleOther)"},
		{"Storebot-Google", "Mozilla/5.0 (X11; Linux x86_64; Storebot-Google/1.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/79.0.3945.88 Safari/537.36"},
		{"Bingbot", "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm) Chrome/116.0.1938.76 Safari/537.36"},
		{"Baiduspider", "Mozilla/5.0 (compatible; Baiduspider/2.0; +http://www.baidu.com/search/spider.html)"},
		{"Baiduspider-image", "Baiduspider-image+(+http://www.baidu.com/search/spider.htm)"},
		{"YandexBot", "Mozilla/5.0 (compatible; YandexBot/3.0; +http://yandex.com/bots)"},
		{"YandexImages", "Mozilla/5.0 (compatible; YandexImages/3.0; +http://yandex.com/bots)"},
		{"DuckDuckBot", "DuckDuckBot/1.1; (+http://duckduckgo.com/duckduckbot.html)"},
		{"Applebot search", "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/13.1.1 Safari/605.1.15 (Applebot/0.1; +http://www.apple.com/go/applebot)"},
		{"PetalBot", "Mozilla/5.0 (Linux; Android 7.0;) AppleWebKit/537.36 (KHTML, like Gecko) Mobile Safari/537.36 (compatible; PetalBot;+https://webmaster.petalsearch.com/site/petalbot)"},
		{"SeznamBot", "Mozilla/5.0 (compatible; SeznamBot/4.0; +https://o-seznam.cz/napoveda/vyhledavani/en/seznambot-crawler/)"},
		{"facebookexternalhit", "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)"},
		{"iMessage preview", "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_11_1) AppleWebKit/601.2.4 (KHTML, like Gecko) Version/9.0.1 Safari/601.2.4 facebookexternalhit/1.1 Facebot Twitterbot/1.0"},
		{"Twitterbot", "Twitterbot/1.0"},
		{"Slackbot", "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)"},
		{"Slack image proxy", "Slack-ImgProxy (+https://api.slack.com/robots)"},
		{"Discordbot", "Mozilla/5.0 (compatible; Discordbot/2.0; +https://discordapp.com)"},
		{"WhatsApp", "WhatsApp/2.23.20.0"},
		{"LinkedInBot", "LinkedInBot/1.0 (compatible; Mozilla/5.0; Apache-HttpClient +http://www.linkedin.com)"},
		{"TelegramBot", "TelegramBot (like TwitterBot)"},
		{"Pinterest", "Pinterestbot/1.0 (+http://www.pinterest.com/bot.html)"},
		{"VS Code", "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Code/1.91.1 Chrome/124.0.6367.243 Electron/30.1.2 Safari/537.36"},
		{"VS Code Insiders", "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Code - Insiders/1.92.0-insider Chrome/124.0.6367.243 Electron/30.1.2 Safari/537.36"},
		{"Cursor editor", "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Cursor/0.40.4 Chrome/124.0.6367.243 Electron/30.1.2 Safari/537.36"},
		{"Electron app", "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Slack/4.39.95 Chrome/126.0.6478.127 Electron/31.2.1 Safari/537.36"},
		{"curl", "curl/8.5.0"},
		{"Go client", "Go-http-client/2.0"},
		{"python requests", "python-requests/2.32.3"},
		{"Scrapy", "Scrapy/2.11.2 (+https://scrapy.org)"},
		{"SemrushBot", "Mozilla/5.0 (compatible; SemrushBot/7~bl; +http://www.semrush.com/bot.html)"},
		{"AhrefsBot", "Mozilla/5.0 (compatible; AhrefsBot/7.0; +http://ahrefs.com/robot/)"},
		{"UptimeRobot", "Mozilla/5.0+(compatible; UptimeRobot/2.0; http://www.uptimerobot.com/)"},
		{"empty", ""},
		{"token inside a word", "MyGPTBotClone/1.0"},
		{"token with a hyphen suffix", "GPTBot-like/1.0"},
		{"token with an underscore prefix", "not_CCBot"},
		{"multi-word token cut short", "Kangaroo"},
		{"multi-word token run on", "Kangaroo Botany/1.0"},
		{"dotted token run on", "bigsur.aix"},
		{"crawler posing as a browser", "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36"},
	}
	for _, tc := range passed {
		t.Run("passed/"+tc.name, func(t *testing.T) {
			if tok, ok := MatchCrawler([]byte(tc.ua)); ok {
				t.Errorf("MatchCrawler(%q) = %q, want no match", tc.ua, tok)
			}
		})
	}
}

// notCurated are the tokens of the reference list (testdata/ai-robots.json)
// that the project's list leaves out on purpose, and why.
var notCurated = map[string]string{
	"Applebot":            "Apple's search crawler (Applebot-Extended is listed)",
	"facebookexternalhit": "link-preview fetcher, also sent by iMessage",
	"PetalBot":            "Huawei's search-engine crawler",
	"Bravebot":            "Brave's search-engine crawler",
	"GoogleOther":         "Google's generic crawler, not declared as AI",
	"GoogleOther-Image":   "Google's generic crawler, not declared as AI",
	"GoogleOther-Video":   "Google's generic crawler, not declared as AI",
	"Code":                "a common word; VS Code and Electron apps send Code/x",
	"Cursor":              "a common word; the Cursor editor's Electron shell sends it",
	"Trae":                "an editor's name, sent by its Electron shell",
	"Devin":               "a personal name",
	"Operator":            "a common word",
	"OpenAI":              "sent by OpenAI's API client libraries; OpenAI's fetchers have their own tokens",
	"Spider":              "a common word; matches Baiduspider raw",
	"LCC":                 "three letters, no documented operator",
	"YaK":                 "three letters; a media-monitoring crawler",
	"Scrapy":              "a general-purpose scraping framework",
	"Lightpanda":          "a headless browser anyone can run",
}

var versionSuffix = regexp.MustCompile(`/[0-9.]+$`)

// TestCrawlerListCoversReference checks that every token of the reference
// list is either matched or left out on purpose (notCurated).
func TestCrawlerListCoversReference(t *testing.T) {
	b, err := os.ReadFile("testdata/ai-robots.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref map[string]json.RawMessage
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	for tok := range ref {
		t.Run(tok, func(t *testing.T) {
			ua := versionSuffix.ReplaceAllString(tok, "")
			_, ok := MatchCrawler([]byte("Mozilla/5.0 (compatible; " + ua + "/1.0)"))
			_, skip := notCurated[tok]
			switch {
			case skip && ok:
				t.Errorf("%s is matched but listed in notCurated", tok)
			case !skip && !ok:
				t.Errorf("%s is neither matched nor in notCurated", tok)
			}
		})
	}
}

func TestCrawlerTokensWellFormed(t *testing.T) {
	seen := map[string]bool{}
	for _, ct := range crawlerTokens {
		low := strings.ToLower(ct.token)
		if seen[low] {
			t.Errorf("%s listed twice", ct.token)
		}
		seen[low] = true
		if ct.kind < crawlerTraining || ct.kind > crawlerAssistant {
			t.Errorf("%s has no kind", ct.token)
		}
		if tok, ok := MatchCrawler([]byte(ct.token)); !ok {
			t.Errorf("%s does not match itself", ct.token)
		} else if !strings.EqualFold(tok, ct.token) && !strings.HasPrefix(low, strings.ToLower(tok)) {
			t.Errorf("%s matched as %s", ct.token, tok)
		}
	}
}
