// The video player: HLS through hls.js (its light build, loaded on demand
// so that pages without a video do not carry it), or the browser's own HLS
// where it has one.
import { useEffect, useRef, useState } from "preact/hooks";

export function Player(props: { src: string; poster?: string; title: string }) {
  const video = useRef<HTMLVideoElement>(null);
  const [error, setError] = useState("");
  useEffect(() => {
    const v = video.current;
    if (!v) return;
    let destroy = () => {};
    let stopped = false;
    (async () => {
      const { default: Hls } = await import("hls.js/light");
      if (stopped) return;
      if (Hls.isSupported()) {
        const hls = new Hls({ enableWorker: false });
        hls.on(Hls.Events.ERROR, (_e, data) => {
          if (data.fatal) setError(`The video cannot be played: ${data.details}`);
        });
        hls.loadSource(props.src);
        hls.attachMedia(v);
        destroy = () => hls.destroy();
      } else if (v.canPlayType("application/vnd.apple.mpegurl")) {
        v.src = props.src;
      } else {
        setError("This browser cannot play HLS video (it lacks Media Source Extensions).");
      }
    })().catch((e: unknown) => setError(`The player did not load: ${String(e)}`));
    return () => {
      stopped = true;
      destroy();
    };
  }, [props.src]);
  return (
    <div>
      <video ref={video} class="player" controls muted playsInline poster={props.poster} aria-label={props.title} />
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
    </div>
  );
}
