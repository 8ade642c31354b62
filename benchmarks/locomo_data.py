"""A generated, LoCoMo-like evidence-retrieval set: long multi-session conversations per user.

Deterministic from a seed (`generate(seed, users_per_lang, sessions)`), nothing committed but
this file. Each user (English or Chinese) talks to an assistant over `sessions` dated sessions
(about 16 turns each, so hundreds of memories a user). Turns are:
- persona facts (a pet, a sibling and their job and city, an employer, an allergy, a hobby), told
  once, some changed later (a move: the question asks where the user lives NOW);
- dated life events (a race, a trip, an injury, a course, ...), told in the session after they
  happened, with a relative time word about half of the time;
- near-misses: the same kinds of facts and events about friends and colleagues, drawn from the
  same pools (so the words of a question also occur in turns that do not answer it);
- chit-chat drawn from a large pool with slots.
Questions (each with the evidence turn ids that answer it): single-hop facts, asked with other
words than the evidence; temporal ("when did I ..."); multi-hop (two turns: "which city does my
sister, the nurse, live in" needs the turn naming the sister's job and the turn of her move);
the current value of a changed fact. Other users hold the same templates with other entities, so
every user's memories are decoys for the others.

How the templates were kept from matching the rules: the question wordings were written from the
point of view of someone asking later, with their own synonym pools (never copied from the turn
templates), before the lexical channel and the time-aware ranking were measured on them; the
weights of those were tuned on seed 1 only and the report uses seed 2 (benchmarks/README.md).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import random

__all__ = ["Turn", "Question", "Dataset", "generate"]


@dataclasses.dataclass(frozen=True)
class Turn:
    user: str
    turn: str
    text: str
    at: float  # epoch seconds of the session


@dataclasses.dataclass(frozen=True)
class Question:
    user: str
    id: str
    text: str
    evidence: frozenset[str]
    category: str  # single-hop | temporal | multi-hop | update


@dataclasses.dataclass
class Dataset:
    turns: dict[str, list[Turn]]
    questions: list[Question]
    lang: dict[str, str]
    now: float  # the day after the last session: when the questions are asked


EN_NAMES = ["Maya", "Lucas", "Priya", "Tom", "Elena", "Kofi", "Hana", "Diego", "Sara", "Owen", "Nadia", "Felix", "Grace", "Ivan", "Leila", "Marco", "Zoe", "Ben", "Aisha", "Noah"]
ZH_NAMES = ["小雨", "阿杰", "晓梅", "志强", "丽娜", "浩然", "思琪", "建国", "佳怡", "子轩", "梦瑶", "俊杰", "雅婷", "宇航", "欣怡", "明轩", "诗涵", "天宇", "嘉欣", "博文"]
EN_CITIES = ["Lisbon", "Denver", "Osaka", "Nairobi", "Montreal", "Krakow", "Austin", "Seville", "Perth", "Glasgow", "Hanoi", "Tallinn"]
ZH_CITIES = ["成都", "杭州", "西安", "厦门", "青岛", "昆明", "南京", "长沙", "大连", "苏州", "重庆", "武汉"]
EN_PETS = [("cat", "kitten"), ("dog", "puppy"), ("rabbit", "bunny"), ("parrot", "bird"), ("tortoise", "little tortoise")]
ZH_PETS = [("猫", "小猫"), ("狗", "小狗"), ("兔子", "小兔子"), ("鹦鹉", "小鹦鹉"), ("乌龟", "小乌龟")]
EN_PET_NAMES = ["Biscuit", "Pepper", "Mochi", "Juniper", "Waffles", "Ziggy", "Clover", "Nugget", "Pixel", "Tofu"]
ZH_PET_NAMES = ["团子", "豆豆", "咪咪", "旺财", "雪球", "可乐", "布丁", "花卷", "年糕", "芝麻"]
EN_JOBS = [("nurse", "works shifts at a hospital"), ("architect", "designs buildings"), ("pilot", "flies planes"), ("teacher", "teaches at a school"), ("chef", "cooks at a restaurant"), ("lawyer", "works at a law firm")]
ZH_JOBS = [("护士", "在医院上班"), ("建筑师", "设计房子"), ("飞行员", "开飞机"), ("老师", "在学校教书"), ("厨师", "在餐厅做菜"), ("律师", "在律所工作")]
EN_REL = [("sister", "sister"), ("brother", "brother"), ("cousin", "cousin")]
ZH_REL = [("姐姐", "姐姐"), ("弟弟", "弟弟"), ("表哥", "表哥")]
EN_EMPLOYERS = ["Northwind Logistics", "Bluefin Analytics", "Copperleaf Bank", "Halcyon Games", "Verdant Foods", "Orbit Telecom"]
ZH_EMPLOYERS = ["星河物流", "蓝鲸数据", "铜叶银行", "晨光游戏", "绿源食品", "环宇通信"]
EN_ALLERGY = [("peanuts", "anything with peanuts"), ("shellfish", "shrimp or crab"), ("penicillin", "that antibiotic"), ("cats", "cat hair")]
ZH_ALLERGY = [("花生", "带花生的东西"), ("海鲜", "虾和螃蟹"), ("青霉素", "那种抗生素"), ("芒果", "芒果做的甜点")]
EN_HOBBY = [("pottery", "throwing bowls on the wheel"), ("bouldering", "climbing at the gym"), ("chess", "playing online chess"), ("salsa", "dancing salsa"), ("birdwatching", "watching birds"), ("woodworking", "building furniture")]
ZH_HOBBY = [("陶艺", "拉坯做碗"), ("攀岩", "去岩馆爬墙"), ("围棋", "下围棋"), ("萨尔萨", "跳萨尔萨舞"), ("观鸟", "去湿地看鸟"), ("木工", "自己做家具")]

# events: (key, told by the user, told about someone else, a later question's own words for it, the same
# question in the event's words: LoCoMo's questions mostly reuse them, so half of ours do)
EN_EVENTS = [
    ("race", "I {when}finished my first half marathon in {city}, my legs are still sore.", "My colleague {name} ran a half marathon in {city}.", "run that long race", "do the half marathon"),
    ("wrist", "I {when}fell off my bike and broke my left wrist.", "{name} broke an arm skiing.", "hurt my arm", "break my wrist"),
    ("promotion", "Big news: I {when}got promoted to team lead at work.", "{name} got a promotion at her job.", "become a team lead", "get promoted to team lead"),
    ("concert", "I {when}saw Radiohead live, best concert of my life.", "{name} went to a jazz concert.", "go to that gig", "see Radiohead live"),
    ("course", "I {when}signed up for an evening course in Italian.", "{name} is taking a Spanish course.", "start learning a language", "sign up for the Italian course"),
    ("wedding", "My best friend got married and I {when}gave the speech at the wedding.", "{name} went to a wedding in {city}.", "speak at a wedding", "give the wedding speech"),
    ("car", "I {when}sold my old Corolla and bought an electric car.", "{name} bought a used car.", "change cars", "buy the electric car"),
    ("camping", "We {when}went camping by a lake in {city}, it rained all night.", "{name} went hiking near {city}.", "sleep in a tent by the water", "go camping by the lake"),]
ZH_EVENTS = [
    ("race", "我{when}在{city}跑完了人生第一个半马，腿到现在还酸。", "同事{name}在{city}跑了个半马。", "跑那场比赛", "跑半马"),
    ("wrist", "我{when}骑车摔了一跤，左手腕骨折了。", "{name}滑雪把胳膊摔断了。", "受伤", "手腕骨折"),
    ("promotion", "好消息，我{when}升职当组长了。", "{name}工作上升职了。", "升职", "升职当组长"),
    ("concert", "我{when}去看了五月天的演唱会，太燃了。", "{name}去听了一场爵士音乐会。", "去看演出", "看五月天演唱会"),
    ("course", "我{when}报了一个意大利语夜校班。", "{name}在学西班牙语。", "开始学外语", "报意大利语夜校"),
    ("wedding", "好朋友结婚，我{when}在婚礼上致辞了。", "{name}去{city}参加了一个婚礼。", "在婚礼上讲话", "在婚礼上致辞"),
    ("car", "我{when}把旧车卖了，换了一辆电动车。", "{name}买了辆二手车。", "换车", "换电动车"),
    ("camping", "我们{when}去{city}的湖边露营，下了一整夜雨。", "{name}去{city}附近徒步了。", "在湖边过夜", "去湖边露营"),]
EN_WHEN = ["yesterday ", "last weekend ", "on Saturday ", "this week ", "", "", "", ""]
ZH_WHEN = ["昨天", "上周末", "周六", "这周", "", "", "", ""]

EN_CHAT = [
    "The weather has been {adj} all week.", "I watched a {adj} documentary about {topic} last night.", "Work was {adj} today, too many meetings.",
    "I made {food} for dinner, it turned out {adj}.", "Do you have tips for sleeping better? I keep waking up at 4.", "My phone battery is dying so fast lately.",
    "I'm thinking about redecorating the living room.", "Traffic this morning was {adj}.", "I read an article about {topic}, pretty {adj}.",
    "Can you recommend a podcast about {topic}?", "I finally cleaned out the garage.", "Coffee tastes {adj} from the new machine.",
    "I should drink more water.", "The neighbours are renovating again, so noisy.", "Thanks, that helps a lot.", "Haha, fair enough.",
    "What do you think about {topic}?", "I'm trying to spend less time on my phone.", "The supermarket was out of {food} again.",
]
EN_ASSIST = ["That sounds {adj}. How are you feeling about it?", "Good to hear from you again.", "Tell me more about that.", "That makes sense.", "I hope the rest of the week is calmer."]
EN_FILL = {"adj": ["strange", "great", "awful", "boring", "lovely", "exhausting", "interesting", "grey"], "topic": ["space", "the ocean", "ancient Rome", "climate", "AI", "bees", "volcanoes"], "food": ["lasagna", "curry", "pancakes", "soup", "tacos", "risotto"]}
ZH_CHAT = [
    "这几天天气{adj}。", "昨晚看了一部关于{topic}的纪录片，挺{adj}的。", "今天上班{adj}，开了一天会。", "晚饭做了{food}，味道{adj}。",
    "有没有睡得更好的办法？我老是四点就醒。", "手机最近掉电特别快。", "在考虑重新布置一下客厅。", "早上堵车{adj}。", "看了篇讲{topic}的文章，{adj}。",
    "能推荐个讲{topic}的播客吗？", "终于把车库收拾干净了。", "新咖啡机做的咖啡{adj}。", "我得多喝水。", "邻居又在装修，吵死了。", "谢谢，很有帮助。",
    "哈哈，也是。", "你怎么看{topic}？", "我想少刷点手机。", "超市的{food}又卖光了。",
]
ZH_ASSIST = ["听起来{adj}。你现在感觉怎么样？", "很高兴又和你聊天。", "多说说？", "有道理。", "希望这周剩下的日子轻松一点。"]
ZH_FILL = {"adj": ["很怪", "不错", "太糟了", "挺无聊", "很好", "累死了", "有意思", "阴沉沉的"], "topic": ["太空", "海洋", "古罗马", "气候", "人工智能", "蜜蜂", "火山"], "food": ["千层面", "咖喱", "煎饼", "汤", "饺子", "炒饭"]}


def _fill(rng: random.Random, template: str, slots: dict[str, list[str]]) -> str:
    return template.format(**{k: rng.choice(v) for k, v in slots.items() if "{" + k + "}" in template})


def _user(rng: random.Random, lang: str, uid: str, sessions: int, start: dt.date) -> tuple[list[Turn], list[Question]]:
    en = lang == "en"
    names, cities = (EN_NAMES, EN_CITIES) if en else (ZH_NAMES, ZH_CITIES)
    pet, pet_name = rng.choice(EN_PETS if en else ZH_PETS), rng.choice(EN_PET_NAMES if en else ZH_PET_NAMES)
    rel, job = rng.choice(EN_REL if en else ZH_REL), rng.choice(EN_JOBS if en else ZH_JOBS)
    sib_name, friend = rng.sample(names, 2)
    home, moved_to, sib_city = rng.sample(cities, 3)
    employer = rng.choice(EN_EMPLOYERS if en else ZH_EMPLOYERS)
    allergy, hobby = rng.choice(EN_ALLERGY if en else ZH_ALLERGY), rng.choice(EN_HOBBY if en else ZH_HOBBY)
    others = [n for n in names if n not in (sib_name, friend)]
    # (fact id, text); the questions below name the evidence by fact id
    if en:
        facts = {
            "pet": f"We brought home a {pet[1]} from the shelter, the kids named it {pet_name}.",
            "sib_job": f"My {rel[0]} {sib_name} is a {job[0]}, she {job[1]}.",
            "sib_move": f"{sib_name} just moved to {sib_city} for a new position.",
            "employer": f"Started my new job at {employer} on Monday.",
            "allergy": f"Reminder to self: I'm allergic to {allergy[0]}, ended up in the ER once.",
            "hobby": f"I've gotten really into {hobby[0]}, {hobby[1]} twice a week.",
            "home": f"Our flat in {home} is tiny but close to the river.",
            "move": f"We signed the lease, we're moving to {moved_to} next month!",
        }
        near = [
            f"My friend {friend} has a {rng.choice(EN_PETS)[0]} called {rng.choice(EN_PET_NAMES)}.",
            f"{rng.choice(others)}'s {rng.choice(EN_REL)[0]} is a {rng.choice(EN_JOBS)[0]} too.",
            f"A colleague is allergic to {rng.choice(EN_ALLERGY)[0]}.",
            f"{friend} wants to try {rng.choice(EN_HOBBY)[0]}.",
            f"{rng.choice(others)} moved to {rng.choice(cities)} last year.",
            f"My old boss now works at {rng.choice(EN_EMPLOYERS)}.",
        ]
        questions = [
            ("single-hop", f"What did we call the {pet[0]} we adopted?", ["pet"]),
            ("single-hop", "Which company do I work for now?", ["employer"]),
            ("single-hop", f"What must I avoid eating or taking, because of my {('allergy')}?" if rng.random() < 0.5 else "What am I allergic to?", ["allergy"]),
            ("single-hop", "What hobby have I been doing every week?", ["hobby"]),
            ("multi-hop", f"Which city does my {rel[1]} who is a {job[0]} live in now?", ["sib_job", "sib_move"]),
            ("update", "Which city am I going to live in?", ["move"]),
        ]
        events, when_words = EN_EVENTS, EN_WHEN
        ask_when = ["When did I {q}?", "How long ago did I {q}?", "What date did I {q}?"]
        chat, assist, fill = EN_CHAT, EN_ASSIST, EN_FILL
    else:
        facts = {
            "pet": f"我们从救助站领养了一只{pet[1]}，孩子们给它起名叫{pet_name}。",
            "sib_job": f"我{rel[0]}{sib_name}是{job[0]}，{job[1]}。",
            "sib_move": f"{sib_name}刚调去{sib_city}了，换了新岗位。",
            "employer": f"周一开始在{employer}上班了。",
            "allergy": f"提醒自己：我对{allergy[0]}过敏，进过一次急诊。",
            "hobby": f"最近迷上了{hobby[0]}，每周{hobby[1]}两次。",
            "home": f"我们在{home}的房子很小，但离江边近。",
            "move": f"合同签了，下个月搬去{moved_to}！",
        }
        near = [
            f"我朋友{friend}养了只{rng.choice(ZH_PETS)[0]}叫{rng.choice(ZH_PET_NAMES)}。",
            f"{rng.choice(others)}的{rng.choice(ZH_REL)[0]}也是{rng.choice(ZH_JOBS)[0]}。",
            f"有个同事对{rng.choice(ZH_ALLERGY)[0]}过敏。",
            f"{friend}想试试{rng.choice(ZH_HOBBY)[0]}。",
            f"{rng.choice(others)}去年搬到{rng.choice(cities)}了。",
            f"我以前的老板现在在{rng.choice(ZH_EMPLOYERS)}。",
        ]
        questions = [
            ("single-hop", f"我们领养的那只{pet[0]}叫什么？", ["pet"]),
            ("single-hop", "我现在在哪家公司工作？", ["employer"]),
            ("single-hop", "我有什么东西不能吃或不能用？", ["allergy"]),
            ("single-hop", "我每周都在玩什么爱好？", ["hobby"]),
            ("multi-hop", f"我那个当{job[0]}的{rel[1]}现在在哪个城市？", ["sib_job", "sib_move"]),
            ("update", "我接下来要住在哪个城市？", ["move"]),
        ]
        events, when_words = ZH_EVENTS, ZH_WHEN
        ask_when = ["我是什么时候{q}的？", "我{q}是多久以前的事？", "我哪天{q}的？"]
        chat, assist, fill = ZH_CHAT, ZH_ASSIST, ZH_FILL
    chosen_events = rng.sample(events, 5)
    # place facts, events and near-misses in sessions; everything else is chit-chat
    placed: dict[int, list[tuple[str, str]]] = {s: [] for s in range(sessions)}
    order = ["home", "pet", "sib_job", "employer", "allergy", "hobby"]
    for i, fid in enumerate(order):
        placed[rng.randrange(0, max(1, sessions // 2))].append((fid, facts[fid]))
    placed[rng.randrange(sessions // 2, sessions)].append(("sib_move", facts["sib_move"]))
    placed[rng.randrange(sessions - max(2, sessions // 5), sessions)].append(("move", facts["move"]))
    for key, own, other, *_ in chosen_events:
        text = own.format(when=rng.choice(when_words), city=rng.choice(cities))
        placed[rng.randrange(sessions)].append((f"event:{key}", text))
    for key, own, other, *_ in events:  # every kind of event also happens to somebody else
        for _ in range(2):
            placed[rng.randrange(sessions)].append(("near", other.format(name=rng.choice(others), city=rng.choice(cities))))
    for text in near:
        for _ in range(2):
            placed[rng.randrange(sessions)].append(("near", text))
    turns: list[Turn] = []
    where: dict[str, str] = {}
    for s in range(sessions):
        day = start + dt.timedelta(days=7 * s + rng.randrange(0, 4))
        at = dt.datetime(day.year, day.month, day.day, 20, tzinfo=dt.timezone.utc).timestamp()
        body = [(None, _fill(rng, rng.choice(chat), fill)) for _ in range(rng.randrange(8, 13))]
        for item in placed[s]:
            body.insert(rng.randrange(len(body) + 1), item)
        n = 0
        for fid, text in body:
            n += 1
            tid = f"{uid}-s{s + 1:02d}-t{n:02d}"
            turns.append(Turn(uid, tid, text, at + n))
            if fid is not None and fid != "near":
                where[fid] = tid
            if rng.random() < 0.35:
                n += 1
                turns.append(Turn(uid, f"{uid}-s{s + 1:02d}-t{n:02d}", _fill(rng, rng.choice(assist), fill), at + n))
    out = [Question(uid, f"{uid}-q{i:02d}", text, frozenset(where[f] for f in ev), cat) for i, (cat, text, ev) in enumerate(questions)]
    for key, _, _, paraphrase, keyword in chosen_events:
        q = keyword if rng.random() < 0.5 else paraphrase
        out.append(Question(uid, f"{uid}-q{len(out):02d}", rng.choice(ask_when).format(q=q), frozenset({where[f"event:{key}"]}), "temporal"))
    return turns, out


def generate(seed: int = 2, users_per_lang: int = 6, sessions: int = 25) -> Dataset:
    """The data set of `seed`: `users_per_lang` English and as many Chinese users."""
    rng = random.Random(seed)
    turns: dict[str, list[Turn]] = {}
    questions: list[Question] = []
    lang: dict[str, str] = {}
    start = dt.date(2025, 1, 6)
    for code in ("en", "zh"):
        for i in range(users_per_lang):
            uid = f"{code}{i:02d}"
            t, q = _user(random.Random(rng.getrandbits(64)), code, uid, sessions, start)
            turns[uid], lang[uid] = t, code
            questions += q
    last = max(t.at for ts in turns.values() for t in ts)
    return Dataset(turns, questions, lang, last + 86400.0)
