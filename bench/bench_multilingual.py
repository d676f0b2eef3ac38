"""``--model multilingual`` (issue 37, part 2) against the bundled MiniLM: embedding speed as
whole ``ragsift embed`` commands, and a small quality check in Chinese and Japanese.

Speed: for each folder, ``ragsift embed FOLDER --index TMP --rebuild --json`` in a new process
per run, alternating the configurations, best of ``--repeats``; wall time of the command and
the summary's chunks and tokens. Three configurations:
- ``minilm``: the default (MiniLM, chunks of 256 of its WordPiece tokens);
- ``minilm-cl100k``: MiniLM on the chunks the multilingual model gets by default
  (``--tokenizer cl100k --size 256``): the same chunks, so the two models' time compares;
- ``multilingual``: ``--model multilingual`` (chunks of 256 cl100k tokens).
Each chunk is embedded as its units (``embedders/evidence.py``), so the model sees units.

Quality: ``SET`` below, short documents written for this check (six per language on six
web-service topics, none from FastAPI's documentation, which issue 37 holds out) and two
questions per document in the same language, worded without copying the document's words
where a paraphrase was natural. Per model, ``Index.query(q, k=3, threshold=None)`` in the
default mode (hybrid; its lexical side reads CJK bigrams since issue 37's part 1) and in
``mode="dense"`` (the model alone): is the first hit the document the question is about; and
at the default threshold
(``threshold="auto"``; MiniLM only: the multilingual model has no measured threshold yet),
is anything admitted and is the first admitted hit right.

    .venv/bin/python -m bench.bench_multilingual --repeats 2

Not claimed: anything about a real documentation site (issue 37's targets are measured on
those separately), nor a threshold for the multilingual model.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

SET: dict[str, list[tuple[str, str, list[str]]]] = {
    "zh": [
        (
            "cors",
            (
                "# 跨域资源共享\n\n浏览器默认禁止网页向不同源的服务器发送请"
                "求。要允许前端从另一个域名调用接口，需要在服务器上启用跨域资"
                "源共享，并在响应头中列出允许的来源、方法和请求头。"
            ),
            ["如何让另一个域名下的网页调用我的接口？", "浏览器为什么拦截了我对其他服务器的请求？"],
        ),
        (
            "upload",
            (
                "# 文件上传\n\n客户端可以通过表单把图片或文档发送到服务器。"
                "服务器读取上传的文件内容，检查文件的大小和类型，然后把它保存"
                "到磁盘上。"
            ),
            ["用户怎样把照片传给服务端？", "怎么限制上传文件的大小和格式？"],
        ),
        (
            "pool",
            (
                "# 数据库连接池\n\n应用启动时创建一个连接池，每个请求从池中"
                "借用一个连接，用完以后归还。这样可以避免每次请求都重新建立数"
                "据库连接，池的大小决定了同时能处理多少查询。"
            ),
            ["为什么每个请求不应该重新连接数据库？", "连接池的容量有什么作用？"],
        ),
        (
            "auth",
            (
                "# 用户认证\n\n用户登录时提交用户名和密码，服务器验证成功后"
                "签发一个令牌。之后每次请求都在请求头里带上这个令牌，服务器据"
                "此识别用户身份；令牌过期后需要重新登录。"
            ),
            ["登录成功以后服务器返回什么？", "令牌失效了应该怎么办？"],
        ),
        (
            "tasks",
            (
                "# 后台任务\n\n有些工作不必让用户等待，例如发送确认邮件或生"
                "成报表。可以在返回响应之后把它们放到后台执行，耗时很长的任务"
                "最好交给独立的任务队列。"
            ),
            ["怎样在返回响应后再发邮件？", "生成报表太慢会拖慢请求吗，应该怎么处理？"],
        ),
        (
            "logging",
            (
                "# 日志配置\n\n日志级别从低到高依次是调试、信息、警告和错误"
                "。生产环境通常只记录警告以上的信息，并把日志写入文件，按天切"
                "分，保留最近三十天。"
            ),
            ["线上环境应该记录哪些级别的日志？", "日志文件怎样按日期分割？"],
        ),
    ],
    "ja": [
        (
            "cache",
            (
                "# キャッシュ\n\n同じ計算結果を何度も求められる場合は、結果"
                "をメモリに保存しておき、次回はそれを返します。データが更新さ"
                "れたら古いキャッシュを破棄する必要があります。"
            ),
            [
                "同じ結果を毎回計算し直さないにはどうすればいいですか？",
                "データが変わったとき保存した結果はどうなりますか？",
            ],
        ),
        (
            "paging",
            (
                "# ページネーション\n\n一覧のデータが多いときは、一度に全部"
                "返さずにページに分けます。クライアントはページ番号と一ページ"
                "あたりの件数を指定して、必要な部分だけを取得します。"
            ),
            ["大量の一覧を少しずつ返す方法は？", "一ページに表示する件数はどうやって決めますか？"],
        ),
        (
            "config",
            (
                "# 環境変数による設定\n\nパスワードや接続先のアドレスはソー"
                "スコードに書かず、環境変数から読み込みます。開発環境と本番環"
                "境で異なる値を使い分けることができます。"
            ),
            [
                "秘密の情報をコードに書かないためにはどうしますか？",
                "本番と開発で設定を変えるには？",
            ],
        ),
        (
            "ratelimit",
            (
                "# レート制限\n\n一人の利用者が短時間に大量のリクエストを送"
                "ると、サーバーが過負荷になります。一分あたりの回数に上限を設"
                "け、超えた場合はエラーを返して待つように伝えます。"
            ),
            ["リクエストが多すぎる利用者をどう制限しますか？", "上限を超えたら何が返されますか？"],
        ),
        (
            "websocket",
            (
                "# WebSocket\n\nWebSocket を使うと、サー"
                "バーとブラウザの間で接続を開いたまま双方向にメッセージを送り"
                "合えます。チャットや通知のようにリアルタイム性が必要な機能に"
                "向いています。"
            ),
            [
                "チャット機能を作るのに向いている通信方式は？",
                "サーバーからブラウザへ即座に知らせるには？",
            ],
        ),
        (
            "testing",
            (
                "# テストの書き方\n\nテスト用のクライアントでアプリにリクエ"
                "ストを送り、返ってきたステータスコードと本文を確認します。デ"
                "ータベースはテストごとに空の状態から始めます。"
            ),
            [
                "アプリの動作を自動で確認するにはどうしますか？",
                "テストのたびにデータベースはどうなりますか？",
            ],
        ),
    ],
}

CONFIGS = {
    "minilm": [],
    "minilm-cl100k": ["--tokenizer", "cl100k", "--size", "256"],
    "multilingual": ["--model", "multilingual"],
}


def loadavg() -> str:
    return Path("/proc/loadavg").read_text().strip()


def embed_once(folder: str, flags: list[str], index: str) -> tuple[float, dict]:
    env = {k: v for k, v in os.environ.items() if k not in ("RAGSIFT_DEBUG", "RAGSIFT_INDEX")}
    env["RAGSIFT_NO_PROJECT"] = "1"
    cmd = [
        sys.executable,
        "-m",
        "ragsift",
        "embed",
        folder,
        "--index",
        index,
        "--rebuild",
        "--json",
        "--quiet",
        *flags,
    ]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if proc.returncode not in (0, 3):
        raise SystemExit(f"{' '.join(cmd)}: exit {proc.returncode}\n{proc.stderr}")
    return wall, json.loads(proc.stdout.splitlines()[-1])


def speed(folders: list[str], repeats: int, work: Path) -> None:
    print(f"load average before: {loadavg()}")
    print("| folder | configuration | chunks | tokens | best wall s | runs s | x minilm-cl100k |")
    print("|---|---|---:|---:|---:|---|---:|")
    for folder in folders:
        runs: dict[str, list[float]] = {name: [] for name in CONFIGS}
        last: dict[str, dict] = {}
        for _ in range(repeats):
            for name, flags in CONFIGS.items():
                wall, summary = embed_once(folder, flags, str(work / f"{name}.db"))
                runs[name].append(wall)
                last[name] = summary
        base = min(runs["minilm-cl100k"])
        for name in CONFIGS:
            s = last[name]
            print(
                f"| {folder} | {name} | {s['chunks']} | {s['tokens']} | {min(runs[name]):.2f} "
                f"| {', '.join(f'{t:.2f}' for t in runs[name])} "
                f"| {min(runs[name]) / base:.2f} |"
            )
    print(f"load average after: {loadavg()}")


def quality(work: Path) -> None:
    from ragsift import api

    print(
        "| language | model | questions | first hit right, hybrid (no threshold) | first hit "
        "right, dense | answered at default | first admitted right |"
    )
    print("|---|---|---:|---:|---:|---:|---:|")
    for lang, docs in SET.items():
        folder = work / lang
        folder.mkdir(parents=True, exist_ok=True)
        for name, text, _ in docs:
            (folder / f"{name}.md").write_text(text + "\n", encoding="utf-8")
        asked = [(q, name) for name, _, qs in docs for q in qs]
        for model in (None, "multilingual"):
            index = work / f"{lang}-{model or 'minilm'}.db"
            api.build(index, [folder], model=model, rebuild=True)
            idx = api.open_index(index)
            first = dense = answered = admitted_right = 0
            for q, name in asked:
                r = idx.query(q, k=3, threshold=None)
                first += Path(r.candidates[0].path).stem == name
                r = idx.query(q, k=3, threshold=None, mode="dense")
                dense += Path(r.candidates[0].path).stem == name
                if model is None:
                    a = idx.query(q, k=3).admitted
                    answered += bool(a)
                    admitted_right += bool(a) and Path(a[0].path).stem == name
            n = len(asked)
            auto = (
                f"{answered}/{n} | {admitted_right}/{n}"
                if model is None
                else "n/a (no measured threshold) | n/a"
            )
            print(f"| {lang} | {model or 'MiniLM'} | {n} | {first}/{n} | {dense}/{n} | {auto} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--folders", nargs="+", default=["fixtures/", "docs/"])
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--skip-speed", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        quality(work)
        if not args.skip_speed:
            speed(args.folders, args.repeats, work)


if __name__ == "__main__":
    main()
