package rules

// crawlerKind says why a crawler token is on the list.
type crawlerKind uint8

const (
	// crawlerTraining collects pages to train or evaluate models, or to
	// build data sets sold for that.
	crawlerTraining crawlerKind = iota + 1
	// crawlerAISearch indexes pages for an AI answer or search engine.
	crawlerAISearch
	// crawlerAssistant fetches a page because a person asked an assistant
	// or agent to.
	crawlerAssistant
)

// crawlerToken is one entry of the curated list.
type crawlerToken struct {
	token string // as its operator writes it; matched case-insensitively
	kind  crawlerKind
}

// crawlerTokens is the project's own list of AI crawler and AI-assistant
// fetcher tokens. It was curated from the public ai.robots.txt list (reference
// data in testdata/ai-robots.json) and operators' documentation; the README says what was
// left out and why. A token is matched as a whole token of the user agent
// (see MatchCrawler), so "Applebot-Extended" does not match Apple's search
// crawler "Applebot", and "meta-externalagent" does not match
// "facebookexternalhit". Tokens that are only ever read from robots.txt
// (Google-Extended, Applebot-Extended, Webzio-Extended) are kept because some
// clients send them as their user agent too.
var crawlerTokens = []crawlerToken{
	// OpenAI
	{"GPTBot", crawlerTraining},
	{"OAI-SearchBot", crawlerAISearch},
	{"ChatGPT-User", crawlerAssistant},
	{"ChatGPT Agent", crawlerAssistant},
	// Anthropic
	{"ClaudeBot", crawlerTraining},
	{"anthropic-ai", crawlerTraining},
	{"Claude-Web", crawlerAssistant},
	{"Claude-SearchBot", crawlerAISearch},
	{"Claude-User", crawlerAssistant},
	{"Claude-Code", crawlerAssistant},
	// Google (Googlebot, the search crawler, is not listed)
	{"Google-Extended", crawlerTraining},
	{"Google-CloudVertexBot", crawlerTraining},
	{"CloudVertexBot", crawlerTraining},
	{"Google-Firebase", crawlerAssistant},
	{"Google-NotebookLM", crawlerAssistant},
	{"NotebookLM", crawlerAssistant},
	{"Google-Gemini-CLI", crawlerAssistant},
	{"Gemini-Deep-Research", crawlerAssistant},
	{"Google-Agent", crawlerAssistant},
	{"GoogleAgent-Mariner", crawlerAssistant},
	{"GoogleAgent-URLContext", crawlerAssistant},
	// Apple (Applebot, the search crawler, is not listed)
	{"Applebot-Extended", crawlerTraining},
	// Meta (facebookexternalhit, the link-preview fetcher, is not listed)
	{"meta-externalagent", crawlerTraining},
	{"meta-externalfetcher", crawlerAssistant},
	{"meta-webindexer", crawlerAISearch},
	{"FacebookBot", crawlerTraining},
	// Amazon
	{"Amazonbot", crawlerTraining},
	{"amazon-kendra", crawlerAISearch},
	{"amazon-QBusiness", crawlerAssistant},
	{"AmazonBuyForMe", crawlerAssistant},
	{"Amzn-SearchBot", crawlerAISearch},
	{"Amzn-User", crawlerAssistant},
	{"bedrockbot", crawlerAssistant},
	{"NovaAct", crawlerAssistant},
	// Perplexity
	{"PerplexityBot", crawlerAISearch},
	{"Perplexity-User", crawlerAssistant},
	// ByteDance
	{"Bytespider", crawlerTraining},
	{"TikTokSpider", crawlerTraining},
	// Common Crawl and other open data sets
	{"CCBot", crawlerTraining},
	{"AI2Bot", crawlerTraining},
	{"AI2Bot-DeepResearchEval", crawlerAssistant},
	{"Ai2Bot-Dolma", crawlerTraining},
	{"img2dataset", crawlerTraining},
	{"LAIONDownloader", crawlerTraining},
	{"laion-huggingface-processor", crawlerTraining},
	// Other model makers and AI products
	{"cohere-ai", crawlerAssistant},
	{"cohere-training-data-crawler", crawlerTraining},
	{"MistralAI-User", crawlerAssistant},
	{"DeepSeekBot", crawlerTraining},
	{"Kimi-User", crawlerAssistant},
	{"TongyiBot", crawlerAssistant},
	{"YiyanBot", crawlerAssistant},
	{"ChatGLM-Spider", crawlerTraining},
	{"PanguBot", crawlerTraining},
	{"YandexAdditional", crawlerTraining},
	{"YandexAdditionalBot", crawlerTraining},
	{"DuckAssistBot", crawlerAssistant},
	{"Manus-User", crawlerAssistant},
	{"Reflectionbot", crawlerTraining},
	{"SBIntuitionsBot", crawlerTraining},
	{"Cotoyogi", crawlerTraining},
	{"ICC-Crawler", crawlerTraining},
	{"Timpibot", crawlerTraining},
	{"Diffbot", crawlerTraining},
	{"omgili", crawlerTraining},
	{"omgilibot", crawlerTraining},
	{"Webzio-Extended", crawlerTraining},
	{"Brightbot", crawlerTraining},
	{"VelenPublicWebCrawler", crawlerTraining},
	{"ImagesiftBot", crawlerTraining},
	{"imageSpider", crawlerTraining},
	{"ISSCyberRiskCrawler", crawlerTraining},
	{"Panscient", crawlerTraining},
	{"panscient.com", crawlerTraining},
	{"Factset_spyderbot", crawlerTraining},
	{"FriendlyCrawler", crawlerTraining},
	{"Kangaroo Bot", crawlerTraining},
	{"Datenbank Crawler", crawlerTraining},
	{"netEstate Imprint Crawler", crawlerTraining},
	{"Poseidon Research Crawler", crawlerTraining},
	{"Sidetrade indexer bot", crawlerTraining},
	{"MyCentralAIScraperBot", crawlerTraining},
	{"NagetBot", crawlerTraining},
	{"newsai", crawlerTraining},
	{"AgentTimes", crawlerTraining},
	{"aiHitBot", crawlerTraining},
	{"Awario", crawlerTraining},
	{"WARDBot", crawlerTraining},
	{"EchoboxBot", crawlerTraining},
	{"Echobot Bot", crawlerTraining},
	{"Crawl4AI", crawlerTraining},
	{"FirecrawlAgent", crawlerTraining},
	{"ApifyBot", crawlerTraining},
	{"ApifyWebsiteContentCrawler", crawlerTraining},
	{"CragCrawler", crawlerTraining},
	{"Crawlspace", crawlerTraining},
	{"HenkBot", crawlerTraining},
	{"KunatoCrawler", crawlerTraining},
	{"AIWebIndex", crawlerAISearch},
	{"TerraCotta", crawlerTraining},
	{"Terra Cotta", crawlerTraining},
	{"Mozilla-Tabstack", crawlerAssistant},
	{"ShapBot", crawlerAISearch},
	{"Shap-User", crawlerAssistant},
	{"TavilyBot", crawlerAISearch},
	{"ExaBot", crawlerAISearch},
	{"ExaSearchBot", crawlerAISearch},
	{"LinkupBot", crawlerAISearch},
	{"QueritBot", crawlerAISearch},
	{"Querit-SearchBot", crawlerAISearch},
	{"AddSearchBot", crawlerAISearch},
	{"Anomura", crawlerAISearch},
	{"Andibot", crawlerAISearch},
	{"AzureAI-SearchBot", crawlerAISearch},
	{"Aranet-SearchBot", crawlerAISearch},
	{"Channel3Bot", crawlerAISearch},
	{"ZanistaBot", crawlerAISearch},
	{"Cloudflare-AutoRAG", crawlerAISearch},
	{"atlassian-bot", crawlerAISearch},
	{"YouBot", crawlerAISearch},
	{"iAskBot", crawlerAISearch},
	{"iaskspider", crawlerAISearch},
	{"PhindBot", crawlerAssistant},
	{"kagi-fetcher", crawlerAssistant},
	{"LinerBot", crawlerAssistant},
	{"GeistHaus-PageFetcher", crawlerAssistant},
	{"Poggio-Citations", crawlerAssistant},
	{"QualifiedBot", crawlerAssistant},
	{"KlaviyoAIBot", crawlerAssistant},
	{"TwinAgent", crawlerAssistant},
	{"bigsur.ai", crawlerAssistant},
	{"wpbot", crawlerAssistant},
	{"Thinkbot", crawlerAssistant},
	{"UseAI", crawlerAssistant},
	{"BuddyBot", crawlerAssistant},
	{"WRTNBot", crawlerAssistant},
	{"Linguee Bot", crawlerTraining},
	{"QuillBot", crawlerAssistant},
	{"quillbot.com", crawlerAssistant},
	{"SemrushBot-OCOB", crawlerAssistant},
	{"SemrushBot-SWA", crawlerAssistant},
	{"opencode", crawlerAssistant},
}
