# shellcheck shell=bash
# The peers, on the same content as the edge, each pinned to $SERVER_CPU
# with one worker (nginx worker_processes 1; Varnish one thread pool and
# hitch one worker; Caddy GOMAXPROCS=1); and the origin of workload 4, an
# nginx answering a fixed 256-byte JSON body, on $CLIENT_CPU (the same for
# every proxy, kept off the core being measured).
#
# TLS: one self-signed ECDSA P-256 certificate for nginx, hitch and Caddy
# (the edge signs its own, ECDSA P-256, from its local CA in DATA/ca); wrk
# does not verify either. nginx and hitch are set to the TLS 1.3 suite that
# Go servers (the edge, Caddy) pick, TLS_AES_128_GCM_SHA256, so every server
# encrypts with the same cipher; run.sh records what each one negotiated.

SITE="" TLS_CERT="" TLS_KEY=""

make_cert() {
	mkdir -p "$WORK/tls"
	TLS_CERT=$WORK/tls/peer.crt TLS_KEY=$WORK/tls/peer.key
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 7 \
		-subj "/CN=bench.localhost" -addext "subjectAltName=DNS:bench.localhost,DNS:benchapp.localhost,IP:127.0.0.1" \
		-keyout "$TLS_KEY" -out "$TLS_CERT" 2>/dev/null || die "openssl: cannot make the peers' certificate"
	cat "$TLS_CERT" "$TLS_KEY" >"$WORK/tls/peer.pem"
	chmod 644 "$TLS_KEY" "$WORK/tls/peer.pem"
}

# nginx_common prints the top of an nginx configuration: one worker, the
# given PID and log files, temp paths under $WORK.
nginx_common() {
	local dir=$1
	mkdir -p "$dir/tmp"
	chmod 777 "$dir/tmp"
	[[ $(id -u) == 0 ]] && echo "user nobody nogroup;"
	cat <<CONF
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 4096; }
CONF
}

# nginx_http prints the http-level settings both nginx instances share.
nginx_http() {
	local dir=$1
	cat <<CONF
    access_log off;
    client_body_temp_path $dir/tmp/body;
    proxy_temp_path $dir/tmp/proxy;
    fastcgi_temp_path $dir/tmp/fastcgi;
    uwsgi_temp_path $dir/tmp/uwsgi;
    scgi_temp_path $dir/tmp/scgi;
    keepalive_timeout 90s;
    keepalive_requests 1000000;
    server_tokens off;
CONF
}

write_nginx() {
	local dir=$WORK/nginx
	mkdir -p "$dir"
	{
		echo "load_module /usr/lib/nginx/modules/ngx_http_geoip2_module.so;"
		nginx_common "$dir"
		cat <<CONF
http {
$(nginx_http "$dir")
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    open_file_cache max=1000 inactive=60s;
    open_file_cache_valid 60s;
    types { text/html html; application/octet-stream bin; }
    default_type application/octet-stream;
    ssl_certificate $TLS_CERT;
    ssl_certificate_key $TLS_KEY;
    ssl_protocols TLSv1.2 TLSv1.3;
    ssl_conf_command Ciphersuites TLS_AES_128_GCM_SHA256;
    ssl_session_cache shared:SSL:10m;

    # Shield-like rules for the nginx+rules server (workloads 1, 3 and 4): the
    # same 10,000 deny ranges (geo), the same 50 countries from the same
    # database (geoip2), an AI-crawler regular expression, the client taken
    # from X-Forwarded-For sent by 127.0.0.1 (realip).
    geo \$bench_denied { default 0; include $WORK/shield/nginx-deny.conf; }
    geoip2 $GEOIP { \$bench_cc source=\$remote_addr country_code; }
    map \$bench_cc \$bench_blocked { default 0; include $WORK/shield/nginx-country.conf; }
    map \$http_user_agent \$bench_ai { default 0; include $WORK/shield/nginx-ai.conf; }

    upstream origin {
        server 127.0.0.1:$ORIGIN;
        keepalive 128;
    }

    server {
        listen 127.0.0.1:$NGINX_HTTP backlog=4096;
        listen 127.0.0.1:$NGINX_HTTPS ssl http2 backlog=4096;
        root $SITE;
        index index.html;
    }
    server {
        listen 127.0.0.1:$NGINX_RULES_HTTP backlog=4096;
        listen 127.0.0.1:$NGINX_RULES_HTTPS ssl http2 backlog=4096;
        set_real_ip_from 127.0.0.1;
        real_ip_header X-Forwarded-For;
        real_ip_recursive on;
        if (\$bench_denied) { return 403 "Access denied\n"; }
        if (\$bench_blocked) { return 403 "Not available in your region\n"; }
        if (\$bench_ai) { return 403 "AI crawlers are not allowed\n"; }
        root $SITE;
        index index.html;
        location ~ /\. { return 404; }
        # Workload 4 as the edge forwards it: behind the same rules, the
        # X-Forwarded-* and X-Real-IP the edge sends the origin, and the
        # headers the edge adds to every answer (HSTS, nosniff, frame and
        # referrer policies, Alt-Svc, X-Cache).
        location /api/ {
            proxy_pass http://origin;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host \$host;
            proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
            proxy_set_header X-Real-IP \$remote_addr;
            proxy_set_header X-Forwarded-Proto \$scheme;
            proxy_set_header X-Forwarded-Host \$host;
            add_header Strict-Transport-Security "max-age=31536000" always;
            add_header X-Content-Type-Options "nosniff" always;
            add_header X-Frame-Options "SAMEORIGIN" always;
            add_header Referrer-Policy "strict-origin-when-cross-origin" always;
            add_header Alt-Svc 'h3=":$NGINX_RULES_HTTPS"; ma=86400' always;
            add_header X-Cache "MISS" always;
        }
    }
    server {
        listen 127.0.0.1:$NGINX_PROXY_HTTP backlog=4096;
        listen 127.0.0.1:$NGINX_PROXY_HTTPS ssl http2 backlog=4096;
        location / {
            proxy_pass http://origin;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host \$host;
            proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
        }
    }
    server {
        listen 127.0.0.1:$NGINX_REDIRECT backlog=4096;
        return 301 https://\$host:$NGINX_HTTPS\$request_uri;
    }
}
CONF
	} >"$dir/nginx.conf"
}

write_origin() {
	local dir=$WORK/origin body
	mkdir -p "$dir"
	# 256 bytes of JSON (with the newline), never cacheable, so every proxy
	# forwards every request.
	local prefix='{"app":"bench-origin","ok":true,"pad":"' pad
	printf -v pad '%*s' $((255 - ${#prefix} - 2)) ''
	body="$prefix${pad// /x}\"}"
	# shellcheck disable=SC2034 # read by lib/load.sh and lib/record.sh
	ORIGIN_BODY_BYTES=$((${#body} + 1))
	{
		nginx_common "$dir"
		cat <<CONF
http {
$(nginx_http "$dir")
    server {
        listen 127.0.0.1:$ORIGIN backlog=4096;
        location / {
            default_type application/json;
            add_header Cache-Control "no-store" always;
            return 200 '$body\\n';
        }
    }
}
CONF
	} >"$dir/nginx.conf"
}

write_varnish() {
	local dir=$WORK/varnish
	mkdir -p "$dir"
	cat >"$dir/default.vcl" <<CONF
vcl 4.1;
backend nginx { .host = "127.0.0.1"; .port = "$NGINX_HTTP"; }
sub vcl_backend_response { set beresp.ttl = 1h; }
CONF
	cat >"$dir/hitch.conf" <<CONF
frontend = "[127.0.0.1]:$HITCH_HTTPS"
backend = "[127.0.0.1]:$VARNISH_PROXY"
pem-file = "$WORK/tls/peer.pem"
workers = 1
daemon = off
write-proxy-v2 = on
tls-protos = TLSv1.2 TLSv1.3
ciphersuites = "TLS_AES_128_GCM_SHA256"
CONF
	[[ $(id -u) == 0 ]] && printf 'user = "nobody"\ngroup = "nogroup"\n' >>"$dir/hitch.conf"
}

write_caddy() {
	local dir=$WORK/caddy ranges
	mkdir -p "$dir/data" "$dir/config"
	ranges=$(cat "$WORK/shield/caddy-deny.txt")
	cat >"$dir/Caddyfile" <<CONF
{
	admin off
	auto_https off
	# HTTP/1.1 and HTTP/2 over TCP, HTTP/3 over UDP on the same port (the rows h2, h3).
	servers {
		protocols h1 h2 h3
	}
}

(files) {
	root * $SITE
	file_server
}
# The deny list of workload 3, from X-Forwarded-For (Caddy 2.6: remote_ip forwarded).
(rules) {
	@denied remote_ip forwarded $ranges
	respond @denied "Access denied" 403
	root * $SITE
	file_server
}
(proxy) {
	reverse_proxy 127.0.0.1:$ORIGIN
}
(tls) {
	tls $TLS_CERT $TLS_KEY
}

http://:$CADDY_HTTP {
	bind 127.0.0.1
	import files
}
https://:$CADDY_HTTPS {
	bind 127.0.0.1
	import tls
	import files
}
http://:$CADDY_RULES_HTTP {
	bind 127.0.0.1
	import rules
}
https://:$CADDY_RULES_HTTPS {
	bind 127.0.0.1
	import tls
	import rules
}
http://:$CADDY_PROXY_HTTP {
	bind 127.0.0.1
	import proxy
}
https://:$CADDY_PROXY_HTTPS {
	bind 127.0.0.1
	import tls
	import proxy
}
http://:$CADDY_REDIRECT {
	bind 127.0.0.1
	redir https://{host}:$CADDY_HTTPS{uri} permanent
}
CONF
}

# start_origin starts the origin of workload 4 (before the edge's app is
# deployed, so the deploy finds it answering).
start_origin() {
	write_origin
	nginx -t -q -c "$WORK/origin/nginx.conf" -e "$WORK/origin/error.log" 2>"$WORK/logs/origin-test.log" ||
		die "origin nginx configuration: $(cat "$WORK/logs/origin-test.log")"
	log "starting the origin (nginx) on CPU $CLIENT_CPU"
	start origin "$CLIENT_CPU" nginx -c "$WORK/origin/nginx.conf" -e "$WORK/origin/error.log" -g 'daemon off;'
	wait_port "$ORIGIN" origin
}

start_peers() {
	SITE=$WORK/content/site
	make_cert
	write_nginx
	write_varnish
	write_caddy
	nginx -t -q -c "$WORK/nginx/nginx.conf" -e "$WORK/nginx/error.log" 2>"$WORK/logs/nginx-test.log" ||
		die "nginx configuration: $(cat "$WORK/logs/nginx-test.log")"

	log "starting nginx, Varnish + hitch, Caddy on CPU $SERVER_CPU"
	start nginx "$SERVER_CPU" nginx -c "$WORK/nginx/nginx.conf" -e "$WORK/nginx/error.log" -g 'daemon off;'
	start varnish "$SERVER_CPU" "$VARNISHD" -F -n "$WORK/varnish/run" -f "$WORK/varnish/default.vcl" \
		-a "127.0.0.1:$VARNISH_HTTP" -a "127.0.0.1:$VARNISH_PROXY,PROXY" \
		-s malloc,512m -T none \
		-p thread_pools=1 -p thread_pool_min=100 -p thread_pool_max=1000
	start hitch "$SERVER_CPU" hitch --config="$WORK/varnish/hitch.conf"
	start caddy "$SERVER_CPU" env GOMAXPROCS=1 XDG_DATA_HOME="$WORK/caddy/data" XDG_CONFIG_HOME="$WORK/caddy/config" \
		caddy run --config "$WORK/caddy/Caddyfile" --adapter caddyfile
	local p
	for p in $NGINX_HTTP $NGINX_HTTPS $NGINX_RULES_HTTP $NGINX_RULES_HTTPS $NGINX_PROXY_HTTP $NGINX_PROXY_HTTPS $NGINX_REDIRECT; do
		wait_port "$p" nginx
	done
	wait_port "$VARNISH_HTTP" varnish
	wait_port "$HITCH_HTTPS" hitch
	for p in $CADDY_HTTP $CADDY_HTTPS $CADDY_RULES_HTTP $CADDY_RULES_HTTPS $CADDY_PROXY_HTTP $CADDY_PROXY_HTTPS $CADDY_REDIRECT; do
		wait_port "$p" caddy
	done
}
