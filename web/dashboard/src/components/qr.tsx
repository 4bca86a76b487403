// A QR code drawn in the browser as SVG, from text (an otpauth:// URI):
// nothing leaves the page.
import qrcode from "qrcode-generator";

export function QRCode(props: { text: string; label: string; size?: number }) {
  const qr = qrcode(0, "M");
  qr.addData(props.text);
  qr.make();
  const n = qr.getModuleCount();
  const quiet = 4;
  let d = "";
  for (let r = 0; r < n; r++) {
    for (let c = 0; c < n; c++) {
      if (qr.isDark(r, c)) d += `M${c + quiet} ${r + quiet}h1v1h-1z`;
    }
  }
  const dim = n + quiet * 2;
  const size = props.size ?? 200;
  return (
    <svg class="qr" width={size} height={size} viewBox={`0 0 ${dim} ${dim}`} role="img" aria-label={props.label} shape-rendering="crispEdges">
      <rect width={dim} height={dim} fill="#fff" />
      <path d={d} fill="#000" />
    </svg>
  );
}
