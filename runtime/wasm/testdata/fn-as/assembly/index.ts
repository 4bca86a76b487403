// A hello-world function in AssemblyScript: the same contract as the Go
// example (CGI over WASI), with no language runtime to start.
const path = process.env.has("PATH_INFO") ? process.env.get("PATH_INFO") : "";
const project = process.env.has("SERVICE_PROJECT_ID") ? process.env.get("SERVICE_PROJECT_ID") : "";
if (path == "/hello") {
  process.stdout.write("Status: 200\r\nContent-Type: text/plain\r\n\r\nhello from " + project + "\n");
} else {
  process.stdout.write("Status: 404\r\nContent-Type: text/plain\r\n\r\nno route\n");
}
