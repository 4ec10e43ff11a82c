"""Medical concepts the rule evaluator recognises, with their common spellings and broader terms."""

from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

THERAPY_CLASSES_PATH = Path(__file__).resolve().parents[2] / "data" / "eligibility" / "therapy_classes.json"


@dataclass(frozen=True)
class Concept:
    """One condition, symptom, treatment or test result, with the ways people write it."""

    key: str
    name: str
    patterns: tuple[str, ...]
    parents: tuple[str, ...] = ()
    # Spellings that state the concept is absent ("non-smoker", "HIV negative").
    absent_patterns: tuple[str, ...] = ()
    # Words right before a match that mean a different thing ("ST depression" is not low mood).
    not_after: tuple[str, ...] = ()
    # Words right after a match that mean a different thing ("insulin resistance" is not insulin use).
    not_before: tuple[str, ...] = ()
    # Concepts that cannot hold together with this one: having type 2 diabetes rules out type 1.
    excludes: tuple[str, ...] = ()


def _c(
    key: str,
    name: str,
    *patterns: str,
    parents: tuple[str, ...] = (),
    absent: tuple[str, ...] = (),
    not_after: tuple[str, ...] = (),
    not_before: tuple[str, ...] = (),
    excludes: tuple[str, ...] = (),
) -> Concept:
    return Concept(key, name, patterns, parents, absent, not_after, not_before, excludes)


_BASE_CONCEPTS: tuple[Concept, ...] = (
    # Heart and vessels
    _c("heart_disease", "heart disease", r"heart diseases?", r"cardiac diseases?", r"cardiovascular diseases?",
       r"heart conditions?", r"cardiac conditions?", parents=("cardiopulmonary_disease",)),
    _c("cardiopulmonary_disease", "heart or lung disease", r"cardiopulmonary diseases?", r"cardio-pulmonary diseases?"),
    _c("hypertension", "high blood pressure", r"hypertensi\w*", r"high blood pressure", r"\bHTN\b",
       r"elevated blood pressure", r"raised blood pressure"),
    _c("hypotension", "low blood pressure", r"hypotensi\w*", r"low blood pressure"),
    _c("heart_failure", "heart failure", r"heart failure", r"cardiac failure", r"\bCHF\b", r"\bHFrEF\b", r"\bHFpEF\b",
       r"cardiac insufficiency", r"congestive cardiac", parents=("heart_disease",)),
    _c("coronary_disease", "coronary artery disease", r"coronary (?:artery|heart) diseases?", r"\bCAD\b", r"\bCHD\b",
       r"isch(?:a)?emic heart diseases?", r"\bIHD\b", parents=("heart_disease",)),
    _c("myocardial_infarction", "heart attack", r"myocardial infarct\w*", r"\bN?STEMI\b", r"\bMI\b", r"heart attacks?",
       parents=("coronary_disease",)),
    _c("angina", "angina", r"angina(?: pectoris)?", parents=("coronary_disease",)),
    _c("unstable_angina", "unstable angina", r"unstable angina(?: pectoris)?", parents=("angina",)),
    _c("arrhythmia", "irregular heartbeat", r"arrh?ythmi\w*", r"dysrhythmi\w*", r"(?:AV|atrioventricular) blocks?",
       r"heart blocks?", r"ventricular tachycardia", r"ventricular fibrillation", parents=("heart_disease",)),
    _c("atrial_fibrillation", "atrial fibrillation", r"atrial fibrillation", r"\bA-?fib\b", r"\bAF\b",
       parents=("arrhythmia",)),
    _c("atrial_flutter", "atrial flutter", r"atrial flutter", parents=("arrhythmia",)),
    _c("valve_disease", "heart valve disease", r"valv(?:ular|e) (?:heart )?diseases?",
       r"(?:mitral|aortic|tricuspid|pulmonary) (?:valve )?(?:stenosis|regurgitation|insufficiency)",
       r"prosthetic (?:heart )?valves?", parents=("heart_disease",)),
    _c("cardiomyopathy", "cardiomyopathy", r"cardiomyopath\w*", parents=("heart_disease",)),
    _c("endocarditis", "endocarditis", r"endocarditis", parents=("heart_disease", "infection")),
    _c("myocarditis", "myocarditis", r"myocarditis", r"pericarditis", parents=("heart_disease",)),
    _c("stroke", "stroke", r"strokes?", r"\bCVA\b", r"cerebr(?:o|al) ?vascular accidents?", r"cerebral infarct\w*",
       parents=("cerebrovascular_disease",)),
    _c("tia", "mini-stroke (TIA)", r"transient isch(?:a)?emic attacks?", r"\bTIA\b", parents=("cerebrovascular_disease",)),
    _c("cerebrovascular_disease", "cerebrovascular disease", r"cerebrovascular diseases?", parents=("neurological_disease",)),
    _c("intracranial_bleeding", "bleeding in the brain", r"intracranial (?:h(?:a)?emorrhage|bleed\w*)",
       r"(?:brain|cerebral|subarachnoid|intracerebral) h(?:a)?emorrhage", parents=("cerebrovascular_disease", "bleeding")),
    _c("subdural_hematoma", "subdural hematoma", r"subdural h(?:a)?ematomas?", r"\bc?SDH\b", r"\bCSH\b",
       parents=("intracranial_bleeding",)),
    _c("peripheral_artery_disease", "peripheral artery disease", r"peripheral (?:arterial|artery|vascular) diseases?",
       r"\bPAD\b", r"arterial insufficiency", r"claudication"),
    _c("venous_thromboembolism", "blood clots", r"venous thromboembol\w*", r"\bVTE\b", r"thromboembol\w*",
       r"blood clots?"),
    _c("dvt", "deep vein thrombosis", r"deep ve(?:in|nous) thrombos[ie]s", r"\bDVT\b", parents=("venous_thromboembolism",)),
    _c("pulmonary_embolism", "pulmonary embolism", r"pulmonary (?:thrombo)?embol\w*", r"\bPE\b",
       parents=("venous_thromboembolism",)),
    _c("aneurysm", "aneurysm", r"aneurysms?"),
    # Metabolism and hormones
    _c("diabetes", "diabetes", r"diabet\w*(?: mellitus)?", r"\bDM\b", not_before=("insipidus",)),
    _c("type1_diabetes", "type 1 diabetes", r"type[- ]?(?:1|I|one) diabet\w*(?: mellitus)?", r"\bIDDM\b", r"\bT1DM?\b",
       r"insulin[- ]dependent diabet\w*(?: mellitus)?", r"juvenile diabet\w*", parents=("diabetes",),
       excludes=("type2_diabetes",)),
    _c("type2_diabetes", "type 2 diabetes", r"type[- ]?(?:2|II|two) diabet\w*(?: mellitus)?", r"\bNIDDM\b", r"\bT2DM?\b",
       r"non[- ]insulin[- ]dependent diabet\w*(?: mellitus)?", parents=("diabetes",), excludes=("type1_diabetes",)),
    _c("obesity", "obesity", r"obes\w*", r"morbid(?:ly)? obes\w*"),
    _c("dyslipidemia", "high cholesterol or blood fats", r"dyslipid(?:a)?emi\w*", r"hyperlipid\w*", r"hypercholesterol\w*",
       r"high cholesterol", r"hypertriglycerid\w*", r"lipid metabolism abnormalit\w*"),
    _c("thyroid_disease", "thyroid disease", r"thyroid (?:diseases?|disorders?|dysfunction)"),
    _c("hypothyroidism", "underactive thyroid", r"hypothyroid\w*", r"underactive thyroid", parents=("thyroid_disease",)),
    _c("hyperthyroidism", "overactive thyroid", r"hyperthyroid\w*", r"graves'? disease", r"thyrotoxicosis",
       parents=("thyroid_disease",)),
    _c("osteoporosis", "osteoporosis", r"osteopor\w*"),
    _c("insulin_resistance", "insulin resistance", r"insulin resistan\w*"),
    # Kidneys and liver
    _c("kidney_disease", "kidney disease", r"(?:renal|kidney) (?:diseases?|insufficiency|impairment|dysfunction|failure)",
       r"\bCKD\b", r"\bESRD\b", r"(?:impaired|reduced|decreased|poor) (?:renal|kidney) function", r"end[- ]stage renal", r"end[- ]stage kidney", r"nephropath\w*"),
    _c("acute_kidney_injury", "sudden kidney injury", r"acute (?:kidney|renal) (?:injury|failure|insufficiency)",
       r"\bAKI\b", parents=("kidney_disease",)),
    _c("dialysis", "dialysis", r"(?:h(?:a)?emo|peritoneal )?dialysis", r"renal replacement therapy"),
    _c("liver_disease", "liver disease", r"(?:liver|hepatic) (?:diseases?|dysfunction|impairment|insufficiency|failure)",
       r"hepatopath\w*", r"(?:impaired|reduced|decreased|poor) (?:hepatic|liver) function"),
    _c("cirrhosis", "cirrhosis", r"cirrho\w*", parents=("liver_disease",)),
    _c("hepatitis", "hepatitis", r"hepatitis", parents=("liver_disease", "infection")),
    _c("hepatitis_b", "hepatitis B", r"hepatitis B", r"\bHBV\b", r"\bHBsAg\b", r"hepatitis B surface antigen",
       parents=("hepatitis",)),
    # Antibodies to hepatitis B show past infection or vaccination, not current infection.
    _c("hbv_antibody", "hepatitis B antibodies", r"hepatitis B (?:surface|core) antibod\w*", r"\bHBsAb\b", r"\bHBcAb\b",
       r"\banti-?HB[sc]\b"),
    _c("hepatitis_c", "hepatitis C", r"hepatitis C", r"\bHCV\b",
       r"(?:(?<=hepatitis B and )|(?<=hepatitis B or )|(?<=hepatitis B/)|(?<=hepatitis B, )|(?<=hepatitis B & ))C\b", parents=("hepatitis",)),
    _c("liver_abscess", "liver abscess", r"(?:liver|hepatic) abscess\w*", parents=("liver_disease", "infection")),
    # Lungs and breathing
    _c("lung_disease", "lung disease", r"(?:lung|pulmonary|respiratory) (?:diseases?|disorders?)",
       parents=("cardiopulmonary_disease",)),
    _c("copd", "COPD", r"\bCOPD\b", r"chronic obstructive (?:pulmonary|lung|airways?) disease", r"emphysema",
       r"chronic bronchitis", parents=("lung_disease",)),
    _c("asthma", "asthma", r"asthma\w*", parents=("lung_disease",)),
    _c("bronchiectasis", "bronchiectasis", r"bronchiectas[ie]s", parents=("lung_disease",)),
    _c("cystic_fibrosis", "cystic fibrosis", r"cystic fibrosis", parents=("lung_disease",)),
    _c("interstitial_lung_disease", "scarring lung disease", r"interstitial lung diseases?", r"\bILD\b",
       r"pulmonary fibrosis", parents=("lung_disease",)),
    _c("pneumonia", "pneumonia", r"pneumoni\w*", parents=("lung_disease", "infection")),
    _c("tuberculosis", "tuberculosis", r"tubercul\w*", r"\bTB\b", parents=("infection",)),
    _c("respiratory_distress", "serious breathing trouble", r"respiratory distress", r"\bARDS\b",
       r"respiratory failure"),
    _c("dyspnea", "shortness of breath", r"dyspn(?:o)?e\w*", r"shortness of breath", r"short of breath",
       r"breathlessness", r"difficulty breathing", r"trouble breathing"),
    _c("cough", "cough", r"cough\w*"),
    _c("sleep_apnea", "sleep apnea", r"sleep apn(?:o)?ea", r"\bOSA\b", r"obstructive apn(?:o)?ea",
       r"sleep[- ]disordered breathing", r"pauses in breathing"),
    _c("snoring", "snoring", r"snor\w*"),
    _c("mechanical_ventilation", "a breathing machine", r"mechanical(?:ly)? ventilat\w*", r"intubat\w*",
       r"ventilator"),
    _c("home_oxygen", "home oxygen", r"home oxygen", r"oxygen therapy", r"supplemental oxygen"),
    # Infections and fever
    _c("infection", "an infection", r"infections?", r"infectious diseases?"),
    _c("sepsis", "sepsis", r"seps[ie]s", r"septic\w*", parents=("infection",)),
    _c("hiv", "HIV", r"\bHIV\b", r"\bAIDS\b", r"human immunodeficiency virus", parents=("immunodeficiency", "infection"),
       absent=(r"HIV[- ]negative",)),
    _c("fever", "fever", r"fevers?", r"febrile", r"pyrexi\w*"),
    _c("covid", "COVID-19", r"covid(?:-?19)?", r"sars-cov-2"),
    # Brain, nerves and mind
    _c("neurological_disease", "a nervous system disease",
       r"neurologic(?:al)? (?:diseases?|disorders?|illness\w*|conditions?)"),
    _c("cognitive_impairment", "memory or thinking problems", r"cognitive (?:impairment|decline|dysfunction|deficits?)",
       r"memory (?:loss|impairment|problems?)", r"poor memory", r"\bMCI\b", r"changes in cognition",
       parents=("neurological_disease",)),
    _c("dementia", "dementia", r"dementia", r"alzheimer'?s?(?: disease)?", parents=("cognitive_impairment",)),
    _c("epilepsy", "seizures", r"epilep\w*", r"seizures?", r"convulsi\w*", parents=("neurological_disease",)),
    _c("multiple_sclerosis", "multiple sclerosis", r"multiple sclerosis", parents=("neurological_disease",)),
    _c("parkinson", "Parkinson's disease", r"parkinson\w*", parents=("neurological_disease",)),
    _c("headache", "headaches", r"headaches?", r"migraines?", r"cephalalgia"),
    _c("neuropathy", "nerve damage", r"neuropath\w*", parents=("neurological_disease",)),
    _c("brain_injury", "brain injury", r"(?:traumatic )?brain injur\w*", r"head (?:injur\w*|trauma)", r"\bTBI\b",
       parents=("neurological_disease",)),
    _c("reduced_consciousness", "reduced consciousness", r"loss of consciousness", r"unconscious\w*", r"\bcoma\b",
       r"(?:decrease|decline|reduction) in (?:his |her |the )?level of consciousness", r"drowsy"),
    _c("spinal_cord_injury", "spinal cord injury", r"spinal cord injur\w*"),
    _c("sleep_disorder", "a sleep disorder", r"sleep disorders?", r"insomnia", r"narcolepsy"),
    _c("psychiatric_disorder", "a mental health condition", r"psychiatric (?:diseases?|disorders?|illness\w*|conditions?)",
       r"mental (?:illness\w*|disorders?|health conditions?)", r"axis (?:i|1)\b(?: disorders?)?"),
    _c("depression", "depression", r"(?:major )?depressi(?:on|ve disorders?)", r"\bMDD\b",
       parents=("psychiatric_disorder",), not_after=("st", "segment", "respiratory", "marrow", "st-segment")),
    _c("bipolar", "bipolar disorder", r"bipolar(?: disorders?| affective disorder)?", r"manic[- ]depress\w*",
       r"manic episodes?", r"\bmania\b", parents=("psychiatric_disorder",)),
    _c("psychosis", "psychosis or schizophrenia", r"schizo\w*", r"psychos[ie]s", r"psychotic(?: disorders?| symptoms?)?",
       parents=("psychiatric_disorder",)),
    _c("anxiety_disorder", "an anxiety disorder", r"anxiety disorders?", r"generali[sz]ed anxiety", r"panic disorders?",
       parents=("psychiatric_disorder",)),
    _c("eating_disorder", "an eating disorder", r"eating disorders?", r"anorexia nervosa", r"bulimi\w*",
       r"binge[- ]eating", parents=("psychiatric_disorder",)),
    _c("substance_abuse", "drug or alcohol misuse", r"substance (?:abuse|use disorders?|dependence|misuse)",
       r"drug (?:abuse|addict\w*|dependence|misuse)", r"illicit drugs?", r"recreational drugs?", r"addict\w*"),
    _c("alcohol_abuse", "alcohol misuse", r"alcohol (?:abuse|dependence|use disorders?|misuse)", r"alcoholi\w*",
       r"heavy (?:\w+ and )?(?:drinking|alcohol use)", r"excessive (?:drinking|alcohol)", parents=("substance_abuse",)),
    _c("suicidality", "thoughts of suicide", r"suicid\w*"),
    _c("intellectual_disability", "intellectual disability", r"mental retardation", r"intellectual disabilit\w*"),
    _c("smoking", "smoking", r"smok(?:er|ers|ing|es|ed)\b", r"tobacco", r"cigarettes?", r"pack[- ]years?",
       absent=(r"non[- ]?smok\w*", r"never[- ]smok\w*", r"does not smoke", r"do not smoke")),
    _c("noncompliance", "trouble following treatment plans", r"non[- ]?complian\w*", r"not complian\w*",
       r"poor (?:compliance|adherence)", r"non[- ]?adheren\w*", r"not adherent"),
    # Cancer
    _c("cancer", "cancer", r"cancers?", r"malignan\w*", r"carcinom\w*", r"adenocarcinom\w*", r"neoplas\w*", r"tumou?rs?", r"metasta\w*",
       r"sarcomas?", r"oncolog\w*", not_before=("group",)),
    _c("lung_cancer", "lung cancer", r"lung (?:cancer|carcinoma)s?", r"cancer of the lung", r"carcinoma of the lung",
       r"bronchogenic carcinoma", parents=("cancer",)),
    # Non-small-cell and small-cell lung cancer are different diseases: one rules out the other.
    _c("nsclc", "non-small cell lung cancer", r"\bNSCLC\b", r"non[- ]small[- ]cell lung(?: cancer| carcinoma)?s?",
       r"non[- ]small[- ]cell carcinoma of the lung", r"lung adenocarcinomas?", r"(?:adeno|squamous cell )carcinoma of the lung",
       r"pulmonary adenocarcinoma", r"adenocarcinoma of the lung", r"squamous(?: cell)? (?:lung|NSCLC)",
       r"(?:non-?squamous|squamous) non[- ]small[- ]cell lung(?: cancer)?",
       parents=("lung_cancer",), excludes=("sclc",)),
    _c("sclc", "small cell lung cancer", r"\bSCLC\b", r"(?<!non-)(?<!non )small[- ]cell lung(?: cancer| carcinoma)?s?",
       r"(?<!non-)(?<!non )small[- ]cell carcinoma(?: of the lung)?", r"oat cell carcinoma",
       parents=("lung_cancer",), excludes=("nsclc",)),
    _c("breast_cancer", "breast cancer", r"breast (?:cancer|carcinoma|adenocarcinoma)", r"carcinoma of the breast",
       r"(?:invasive )?(?:ductal|lobular) carcinoma", r"\bIDC\b", r"\bDCIS\b", parents=("cancer",)),
    _c("prostate_cancer", "prostate cancer", r"prostat(?:e|ic) (?:cancer|carcinoma|adenocarcinoma)",
       parents=("cancer",)),
    _c("colorectal_cancer", "bowel cancer", r"colo(?:n|rectal) (?:cancer|carcinoma)", parents=("cancer",)),
    _c("esophageal_cancer", "esophageal cancer", r"o?esophag(?:eal|us) (?:cancer|carcinoma|adenocarcinoma)",
       r"adenocarcinoma of the o?esophagus", parents=("cancer",)),
    _c("gastric_cancer", "stomach cancer", r"(?:gastric|stomach) (?:cancer|carcinoma)", parents=("cancer",)),
    _c("cervical_cancer", "cervical cancer", r"cervical (?:cancer|carcinoma)", parents=("cancer",)),
    _c("skin_cancer", "skin cancer", r"skin cancer", r"melanoma", r"basal cell carcinoma", parents=("cancer",)),
    _c("leukemia", "leukemia", r"leuka?emi\w*", r"\bAML\b", r"\bCLL\b", r"\bCML\b", r"(?-i:\bALL\b)", parents=("cancer",)),
    _c("lymphoma", "lymphoma", r"lymphomas?", r"\bDLBCL\b", r"hodgkin'?s?(?: disease)?", parents=("cancer",)),
    _c("myeloma", "myeloma", r"myelomas?", r"plasma cell (?:myeloma|neoplasm|dyscrasia)s?", parents=("cancer",)),
    # Stomach, gut, blood, immunity, skin
    _c("diarrhea", "diarrhea", r"diarrh(?:o)?ea\w*", r"loose stools?"),
    _c("gi_bleeding", "bleeding from the gut", r"(?:gastrointestinal|\bGI) (?:bleed\w*|h(?:a)?emorrhage)", r"mel(?:a)?ena",
       r"h(?:a)?ematemesis", parents=("bleeding",)),
    _c("bleeding", "bleeding", r"active bleeding", r"h(?:a)?emorrhag\w*", r"bleed(?:ing|s)?"),
    _c("bleeding_disorder", "a bleeding disorder", r"bleeding (?:disorders?|diathes[ie]s|tendency)", r"coagulopath\w*",
       r"h(?:a)?emophilia", r"clotting disorders?", r"coagulation disorders?"),
    _c("inflammatory_bowel_disease", "inflammatory bowel disease", r"inflammatory bowel diseases?", r"crohn'?s?(?: disease)?",
       r"ulcerative colitis"),
    _c("appendicitis", "appendicitis", r"appendicitis"),
    _c("dysphagia", "trouble swallowing", r"dysphagia", r"difficulty swallowing", r"trouble swallowing"),
    _c("varices", "enlarged veins in the food pipe", r"(?:o?esophageal )?varices"),
    _c("anemia", "anemia", r"\ban(?:a)?emi\w*"),
    _c("thrombocytopenia", "low platelets", r"thrombocytopeni\w*", r"low platelets?(?: count)?"),
    _c("neutropenia", "low white blood cells", r"neutropeni\w*", r"low white (?:blood )?cells?(?: count)?"),
    _c("sickle_cell", "sickle cell disease", r"sickle[- ]cell(?: an(?:a)?emia| disease)?"),
    _c("thalassemia", "thalassemia", r"thalass(?:a)?emi\w*"),
    _c("immunodeficiency", "a weak immune system", r"immuno-?deficien\w*", r"immune deficien\w*",
       r"immunocompromis\w*", r"immunosuppressed", r"immuno-?suppressing diseases?"),
    _c("cvid", "common variable immunodeficiency", r"common variable immun\w*(?: deficiency)?", r"\bCVID\b",
       parents=("immunodeficiency",)),
    _c("autoimmune_disease", "an autoimmune disease", r"autoimmun\w*(?: diseases?| disorders?)?"),
    _c("lupus", "lupus", r"systemic lupus(?: erythematosus)?", r"\bSLE\b", r"\blupus\b", parents=("autoimmune_disease",)),
    _c("rheumatoid_arthritis", "rheumatoid arthritis", r"rheumatoid arthritis", parents=("autoimmune_disease",)),
    _c("psoriasis", "psoriasis", r"psoria\w*", parents=("autoimmune_disease", "skin_disease")),
    _c("skin_disease", "a skin condition", r"skin (?:diseases?|disorders?|conditions?)", r"dermatitis", r"eczema"),
    _c("allergy", "an allergy", r"allerg\w*", r"hypersensitivit\w*", r"anaphyla\w*"),
    # Treatments
    _c("antidiabetics", "diabetes medicines", r"anti-?diabetic (?:drugs?|medications?|medicines?|agents?|therap\w*)",
       r"(?:oral )?(?:glucose|blood sugar)[- ]lowering (?:drugs?|medications?|agents?|therap\w*)",
       r"oral anti-?diabetics?", r"oral hypoglyc(?:a)?emic (?:drugs?|agents?)"),
    _c("insulin", "insulin", r"\binsulin\b", parents=("antidiabetics",),
       not_before=("resistance", "resistant", "dependent", "-dependent", "sensitivity")),
    _c("basal_insulin", "basal (long-acting) insulin", r"basal insulin", r"long[- ]acting insulin", r"insulin glargine",
       r"glargine", r"insulin detemir", r"detemir", r"insulin degludec", r"degludec", r"\bNPH(?: insulin)?\b",
       parents=("insulin",)),
    _c("metformin", "metformin", r"metformin", r"biguanides?", parents=("antidiabetics",)),
    _c("sulfonylurea", "sulfonylurea", r"sulfonylureas?", r"sulphonylureas?", r"glipizide", r"glimepiride", r"gliclazide",
       r"glibenclamide", r"glyburide", parents=("antidiabetics",)),
    _c("dpp4_inhibitor", "DPP-4 inhibitor", r"DPP-?4 inhibitors?", r"dipeptidyl peptidase[- ]4 inhibitors?", r"\w+gliptin\b",
       parents=("antidiabetics",)),
    _c("sglt2_inhibitor", "SGLT2 inhibitor", r"SGLT-?2 inhibitors?", r"\w+gliflozin\b", parents=("antidiabetics",)),
    _c("glp1_agonist", "GLP-1 medicine", r"GLP-?1(?: receptor)? (?:agonists?|RAs?|analogues?)", r"semaglutide",
       r"liraglutide", r"dulaglutide", r"exenatide", r"tirzepatide", parents=("antidiabetics",)),
    _c("corticosteroids", "steroid medicines", r"corticosteroids?", r"steroids?", r"prednis\w*", r"dexamethasone",
       r"hydrocortisone", r"methylprednisolone"),
    _c("immunosuppressants", "immune-suppressing medicines", r"immunosuppress(?:ive|ant|ion)\w*(?: (?:drugs?|agents?|therapy|medications?))?"),
    _c("antibiotics", "antibiotics", r"antibiotics?", r"antimicrobials?"),
    _c("anticoagulants", "blood thinners", r"anticoagula\w*", r"warfarin", r"heparin", r"apixaban", r"rivaroxaban",
       r"dabigatran", r"blood[- ]thinn\w*"),
    _c("antiplatelets", "antiplatelet medicines", r"antiplatelet\w*", r"aspirin", r"clopidogrel"),
    _c("beta_blockers", "beta blockers", r"beta[- ]?blockers?", r"\w+olol\b"),
    _c("calcium_channel_blockers", "calcium channel blockers", r"calcium channel blockers?", r"amlodipine", r"nifedipine",
       r"diltiazem", r"verapamil"),
    _c("arb", "angiotensin receptor blockers", r"angiotensin(?: ii)? receptor blockers?", r"\bARBs?\b", r"\w+sartan\b"),
    _c("ace_inhibitors", "ACE inhibitors", r"\bACE inhibitors?", r"\w+pril\b"),
    _c("lipid_lowering", "cholesterol-lowering medicines", r"statins?", r"\w+vastatin\b", r"lipid[- ]lowering",
       r"cholesterol[- ]lowering", r"ezetimibe"),
    _c("psychotropics", "psychiatric medicines", r"psychotropic\w*"),
    _c("antidepressants", "antidepressants", r"antidepressants?", r"\bSSRIs?\b", r"\bSNRIs?\b", r"fluoxetine",
       r"sertraline", r"(?:es)?citalopram", r"paroxetine", r"venlafaxine", r"duloxetine", r"mirtazapine", r"bupropion",
       parents=("psychotropics",)),
    _c("antipsychotics", "antipsychotic medicines", r"antipsychotics?", r"neuroleptics?", r"major tranquili[sz]ers?",
       r"haloperidol", r"olanzapine", r"quetiapine", r"risperidone", r"aripiprazole", r"clozapine", r"ziprasidone",
       parents=("psychotropics",)),
    _c("mood_stabilizers", "mood stabilisers", r"mood stabili[sz]ers?", r"lithium", r"valproate", r"lamotrigine",
       parents=("psychotropics",)),
    _c("sedatives", "sleeping or calming medicines", r"sedatives?", r"hypnotics?", r"zolpidem", r"benzodiazepines?",
       parents=("psychotropics",)),
    _c("thyroid_hormone", "thyroid hormone", r"levothyrox\w*", r"l-?thyroxine", r"thyroxine",
       r"thyroid (?:hormone )?replacement"),
    _c("iron_supplements", "iron supplements", r"iron (?:supplement\w*|therapy|tablets?)", r"ferrous \w+"),
    _c("nitrates", "nitrate medicines", r"nitrates?", r"nitroglycerin\w*"),
    _c("opioids", "opioid medicines", r"opioids?", r"opiates?", r"morphine", r"methadone"),
    _c("thrombolysis", "clot-busting treatment", r"thromboly\w*", r"\btPA\b", r"alteplase"),
    _c("transplant", "an organ transplant", r"transplant\w*"),
    _c("pci", "a coronary stent or angioplasty", r"percutaneous coronary intervention", r"\bPCI\b", r"\bPTCA\b",
       r"angioplasty", r"coronary stent\w*"),
    _c("cabg", "heart bypass surgery", r"\bCABG\b", r"coronary artery bypass"),
    _c("cardiac_catheterization", "cardiac catheterization", r"cardiac catheteri[sz]ation", r"coronary angiograph\w*"),
    _c("central_venous_catheter", "a central line", r"central ven(?:ous|a) (?:catheter\w*|puncture|access|line)",
       r"central lines?"),
    _c("hysterectomy", "removal of the womb", r"hysterectom\w*"),
    # Symptoms and findings
    _c("chest_pain", "chest pain", r"chest pain", r"chest discomfort"),
    _c("abdominal_pain", "belly pain", r"abdominal pain", r"belly pain", r"stomach pain"),
    _c("fatigue", "tiredness", r"fatigue", r"tiredness"),
    _c("edema", "swelling", r"o?edema", r"swelling"),
    _c("syncope", "fainting", r"syncope", r"faint(?:ing|ed)"),
    _c("palpitations", "palpitations", r"palpitations?"),
    _c("nausea", "nausea or vomiting", r"nausea", r"vomit\w*"),
    _c("weight_loss", "weight loss", r"weight loss", r"lost (?:a total of )?\d+ (?:pounds|lbs?|kg|kilograms)"),
    _c("sleepiness", "sleepiness", r"sleepiness", r"somnolence", r"drowsiness"),
    _c("skin_ulcer", "a skin ulcer", r"(?:skin|leg|foot|cutaneous|venous|diabetic) ulcers?", r"ulcers?"),
    _c("trauma", "an injury", r"trauma\w*", r"injur(?:y|ies|ed)", r"fractures?"),
    # Biomarkers and test results
    _c("hpv", "HPV", r"\bHPV\b", r"human papilloma ?virus", absent=(r"HPV[- ]negative",)),
)



# --- Cancer therapy classes (shipped as data, see data/eligibility/therapy_classes.json) -----------


def _phrase_pattern(phrase: str) -> str:
    """A plain phrase as a regex: spaces and hyphens are interchangeable (or absent), a plural 's' is optional."""
    words = re.split(r"[\s-]+", phrase.strip())
    body = r"[- ]?".join(re.escape(w) for w in words if w)
    if phrase[-1:].islower():
        body += "s?"
    return body


def therapy_class_data(path: Path = THERAPY_CLASSES_PATH) -> dict[str, Any]:
    """The therapy-class file as loaded (its 'source' says where the classes come from)."""
    with path.open(encoding="utf-8") as handle:
        data: dict[str, Any] = json.load(handle)
    return data


DRUG_SYNONYMS_CSV = THERAPY_CLASSES_PATH.with_name("drug_synonyms.csv")


@lru_cache(maxsize=1)
def _class_drugs() -> dict[str, tuple[frozenset[str], frozenset[str]]]:
    """Each therapy class's drug names and brand names, lower case."""
    return {item["key"]: (frozenset(d.lower() for d in item.get("drugs", ())),
                          frozenset(b.lower() for b in item.get("brands", ())))
            for item in therapy_class_data()["classes"]}


@lru_cache(maxsize=1)
def drug_synonyms() -> dict[str, str]:
    """Another name of a drug → the name it is listed under (drug_synonyms.csv: "T-DM1" → trastuzumab
    emtansine)."""
    with DRUG_SYNONYMS_CSV.open(encoding="utf-8", newline="") as handle:
        return {r["name"].lower(): r["same_as"].lower() for r in csv.DictReader(handle)}


@lru_cache(maxsize=1024)
def _name_pattern(name: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w-]){_phrase_pattern(name)}(?![\w-])", re.I)


def _named_in(name: str, text: str) -> bool:
    return _name_pattern(name).search(text) is not None


def other_drug_of_class(key: str, named: str, record: str) -> bool:
    """Whether a criterion naming one drug of a class by its name ("prior T-DM1") meets a record that shows
    the class only through other drugs named by their generic names ("trastuzumab and pertuzumab"): a
    different drug, so the class alone does not show it. A record that names a brand of the class, or none of
    its drugs, is not read this way (brands are not mapped to their drugs)."""
    drugs, brands = _class_drugs().get(key, (frozenset(), frozenset()))
    synonyms = drug_synonyms()
    wanted = synonyms.get(named.lower(), named.lower())
    if wanted not in drugs and named.lower() not in drugs:
        return False  # the criterion names the class, or a brand
    if any(_named_in(b, record) for b in brands):
        return False
    shown = {synonyms.get(d, d) for d in drugs if _named_in(d, record)}
    return bool(shown) and wanted not in shown


def _therapy_concepts() -> tuple[Concept, ...]:
    out = []
    for item in therapy_class_data()["classes"]:
        names = list(item.get("terms", ())) + list(item.get("drugs", ())) + list(item.get("brands", ()))
        patterns = tuple(_phrase_pattern(n) for n in names)
        # "immunotherapy-naive", "naive to chemotherapy": the spelling itself says the treatment was never given.
        naive = tuple(f"(?:{_phrase_pattern(n)})(?:\\s*\\([^()]{{1,15}}\\))?[- ](?:treatment|therapy)[- ]na[iï]ve"
                      for n in item.get("terms", ()))
        naive += tuple(f"(?:{_phrase_pattern(n)})[- ]?na[iï]ve" for n in item.get("terms", ()))
        naive += tuple(f"na[iï]ve to (?:prior |previous )?(?:{_phrase_pattern(n)})" for n in item.get("terms", ()))
        absent = naive + tuple(_phrase_pattern(n) for n in item.get("absent_terms", ()))
        out.append(Concept(item["key"], item["name"], patterns, tuple(item.get("parents", ())), absent,
                           not_before=tuple(item.get("not_before", ()))))
    return tuple(out)


# --- Biomarkers: a gene or receptor with the words that say its status ------------------------------

_PRESENT_STATUS = (
    r"(?:[- ]?(?:gene )?(?:positive|pos|\+|mutat\w*|mutant|mutation[- ]positive|amplifi\w*|amplified|rearrange\w*|fusions?|"
    r"fusion[- ]positive|translocat\w*|alterations?|altered|overexpress\w*|driver mutations?|sensiti[sz]ing mutations?|"
    r"activating mutations?|exon \d+ (?:deletion|insertion|mutation)s?|variants?))?"
)
_ABSENT_STATUS = (
    r"[- ]?(?:(?:gene |mutation |mutational |rearrangement |fusion |amplification |expression |receptor )?"
    r"(?:status |testing |test |analysis |result )?(?:was |is |were |came back |:\s*)?)?"
    r"(?:wild[- ]?type|wt\b|negative|neg\b|non[- ]?mutated|unmutated|not (?:mutated|amplified|rearranged|detected|"
    r"expressed|overexpressed|identified|found)|no (?:mutations?|alterations?|rearrangements?|fusions?|amplification)"
    r"(?: (?:detected|found|identified))?|0\b|1\+|-(?![\w]))"
)


def _biomarker(key: str, name: str, gene: str, *, parents: tuple[str, ...] = (), extra_present: tuple[str, ...] = (),
               extra_absent: tuple[str, ...] = (), excludes: tuple[str, ...] = ()) -> Concept:
    """A biomarker whose spelling carries its status: "EGFR exon 19 deletion" present, "EGFR wild-type" absent.

    A bare gene name ("EGFR testing") is not a status; in a note it only counts next to a status word.
    """
    present = extra_present + (rf"(?:{gene}){_PRESENT_STATUS}",)
    absent = (rf"(?:{gene}){_ABSENT_STATUS}", rf"(?:wild[- ]?type|non[- ]?mutated|unmutated) (?:{gene})") + extra_absent
    return Concept(key, name, present, parents, absent,
                   not_before=("testing", "test", "tests", "tested", "status", "analysis", "sequencing", "pending",
                               "assay", "results", "result", "inhibitor", "inhibitors", "tki", "tkis", "-tki",
                               "antibody", "directed", "targeted", "expression", "ligand", "blockade", "treatment",
                               "treatments", "therapy", "therapies", "agents", "agent", "drugs", "drug"),
                   excludes=excludes)


_BIOMARKERS: tuple[Concept, ...] = (
    _biomarker("egfr", "an EGFR mutation", r"\bEGFR\b", extra_present=(r"\b(?:L858R|T790M|C797S)\b",
                                                                       r"\bexon 19 deletion", r"\bexon 20 insertion")),
    _biomarker("alk", "an ALK rearrangement", r"\bALK\b|anaplastic lymphoma kinase"),
    _biomarker("ros1", "a ROS1 rearrangement", r"\bROS[- ]?1\b"),
    _biomarker("kras", "a KRAS mutation", r"\bK-?RAS\b", extra_present=(r"\bG12C\b",)),
    _biomarker("braf", "a BRAF mutation", r"\bBRAF\b", extra_present=(r"\bV600[EK]?\b",)),
    _biomarker("met_alteration", "a MET alteration", r"\bc?-?MET\b(?= ?(?:exon|amplif|mutat|alter|fusion|positive|overexp))"),
    _biomarker("ret", "a RET fusion", r"\bRET\b(?= ?(?:fusion|rearrang|mutat|alter|positive|-))"),
    _biomarker("ntrk", "an NTRK fusion", r"\bNTRK[123]?\b"),
    _biomarker("her2", "HER2-positive disease", r"\bHER-?2(?:/neu)?\b|\bERBB2\b",
               extra_present=(r"\bHER-?2 (?:3\+|IHC 3\+)",)),
    _biomarker("brca", "a BRCA mutation", r"\b(?:g?BRCA[12]?|BRCA1/2)\b"),
    _biomarker("pd_l1", "PD-L1 expression", r"\bPD-?L1\b"),
    _biomarker("hormone_receptor", "hormone-receptor-positive disease",
               r"\b(?:HR|hormone[- ]receptor)\b", extra_present=(r"\bHR\+", r"\bhormone receptor[- ]positive"),
               excludes=("triple_negative",)),
    _biomarker("estrogen_receptor", "estrogen-receptor-positive disease", r"\b(?:ER|o?estrogen[- ]receptor)\b(?=[- ]?(?:\+|pos|neg|stat|expr|/|\d|-))",
               parents=("hormone_receptor",), excludes=("triple_negative",)),
    _biomarker("progesterone_receptor", "progesterone-receptor-positive disease", r"\b(?:PR|PgR|progesterone[- ]receptor)\b(?=[- ]?(?:\+|pos|neg|stat|expr|\d|-))",
               parents=("hormone_receptor",), excludes=("triple_negative",)),
    Concept("triple_negative", "triple-negative breast cancer", (r"triple[- ]negative(?: breast cancer)?", r"\bTNBC\b"),
            ("breast_cancer",), excludes=("hormone_receptor", "her2")),
    _biomarker("philadelphia", "Philadelphia chromosome / BCR-ABL", r"\bPh\+|\bPhiladelphia chromosome(?:[- ]positive)?|\bBCR[- :]+ABL1?\b"),
    _biomarker("flt3", "a FLT3 mutation", r"\bFLT-?3\b(?:[- ]ITD|[- ]TKD)?"),
    _biomarker("idh", "an IDH mutation", r"\bIDH[12]?\b"),
    _biomarker("npm1", "an NPM1 mutation", r"\bNPM-?1\b"),
    _biomarker("pik3ca", "a PIK3CA mutation", r"\bPIK3CA\b"),
    _biomarker("msi_high", "MSI-high / mismatch-repair deficiency", r"\bMSI[- ]?H(?:igh)?\b|\bdMMR\b|mismatch repair[- ]deficien\w*"),
)

CONCEPTS: tuple[Concept, ...] = _BASE_CONCEPTS + _therapy_concepts() + _BIOMARKERS
_BIOMARKER_KEYS = frozenset(c.key for c in _BIOMARKERS)
_TEST_CONTEXT = re.compile(r"^\s*(?:(?!was\b|were\b|is\b|by\b|detected\b|confirmed\b|found\b)[\w/-]+\s+){0,2}"
                           r"(?:test|testing|tests|tested|assay|analysis|sequencing|genotyping|screening|determination|"
                           r"evaluation)\b")

@cache
def concept_index() -> dict[str, Concept]:
    """Concepts by key."""
    return {c.key: c for c in CONCEPTS}


@cache
def compiled_patterns() -> tuple[tuple[Concept, re.Pattern[str], re.Pattern[str] | None], ...]:
    """Each concept with one compiled regex for its spellings and one for its 'absent' spellings."""
    out = []
    for concept in CONCEPTS:
        # Longer spellings first, so "anti-PD-1/PD-L1" is not cut short at "anti-PD-1".
        spellings = sorted(concept.patterns, key=len, reverse=True)
        present = re.compile(r"(?<![\w-])(?:" + "|".join(spellings) + r")(?![\w])", re.I)
        absent = (
            re.compile(r"(?<![\w-])(?:" + "|".join(concept.absent_patterns) + r")(?![\w])", re.I)
            if concept.absent_patterns
            else None
        )
        out.append((concept, present, absent))
    return tuple(out)


def _split_top(body: str) -> list[str] | None:
    """The top-level alternatives of a regex body (None if brackets do not balance)."""
    parts, depth, start = [], 0, 0
    for m in re.finditer(r"\\.|[(\[)\]|]", body, re.S):  # an escaped character is skipped whole
        if m.group(0) in "([":
            depth += 1
        elif m.group(0) in ")]":
            depth -= 1
        elif m.group(0) == "|" and depth == 0:
            parts.append(body[start : m.start()])
            start = m.end()
    parts.append(body[start:])
    return parts if depth == 0 else None


def _mandatory_prefixes(pattern: str) -> frozenset[str] | None:
    """Letter runs (two or more) one of which starts every match of this regex, or None when unclear."""
    alternatives = _split_top(pattern)
    if alternatives is None:
        return None
    out: set[str] = set()
    for body in alternatives:
        while body.startswith("\\b"):
            body = body[2:]
        if body.startswith("(?:"):
            depth, close = 0, -1
            for i, ch in enumerate(body):
                if ch == "\\":
                    continue
                if ch == "(" and (i == 0 or body[i - 1] != "\\"):
                    depth += 1
                elif ch == ")" and body[i - 1] != "\\":
                    depth -= 1
                    if depth == 0:
                        close = i
                        break
            if close < 0 or body[close + 1 : close + 2] in ("?", "*", "{"):
                return None
            inner = _mandatory_prefixes(body[3:close])
            if inner is None:
                return None
            out |= inner
            continue
        run = ""
        for i, ch in enumerate(body):
            if not ch.isalpha() or (i + 1 < len(body) and body[i + 1] in "?*{"):
                break
            run += ch
        if len(run) < 2:
            return None
        out.add(run.lower())
    return frozenset(out)


@cache
def concept_prefilters() -> tuple[frozenset[str] | None, ...]:
    """Per concept (in CONCEPTS order), letters one of which any present or absent match must contain, or None.

    Running ~250 regexes over every text is the evaluator's main cost; a concept none of whose spellings'
    opening letters occur in the text cannot match it, so its regexes are skipped.
    """
    out: list[frozenset[str] | None] = []
    for concept in CONCEPTS:
        prefixes = [_mandatory_prefixes(p) for p in concept.patterns + concept.absent_patterns]
        known = [p for p in prefixes if p is not None]
        out.append(frozenset().union(*known) if len(known) == len(prefixes) else None)
    return tuple(out)


@cache
def ancestors(key: str) -> frozenset[str]:
    """Every broader concept of this one (its parents, their parents, ...)."""
    index = concept_index()
    seen: set[str] = set()
    stack = list(index[key].parents)
    while stack:
        parent = stack.pop()
        if parent in seen or parent not in index:
            continue
        seen.add(parent)
        stack.extend(index[parent].parents)
    return frozenset(seen)


@dataclass(frozen=True)
class ConceptMatch:
    """Where a concept is written in a text, and whether that spelling itself says 'absent'."""

    key: str
    start: int
    end: int
    absent: bool


def find_concepts(text: str) -> list[ConceptMatch]:
    """All concept mentions in a text; a mention inside a longer, more specific one is dropped."""
    return list(_find_concepts(text))


_GENE_LIST_BEFORE = re.compile(r"\b(?:wild[- ]?type|non[- ]?mutated|unmutated|negative for|without|no|absence of|"
                               r"lack of)\s+(?:for\s+|any\s+|known\s+)?"
                               r"(?:[A-Za-z0-9-]{2,12}(?:\s*,\s*|\s*/\s*|,?\s+and\s+|,?\s+or\s+))*$", re.I)
_GENE_LIST_AFTER = re.compile(r"^(?:(?:\s*,\s*|\s*/\s*|,?\s+and\s+|,?\s+or\s+)[A-Za-z0-9-]{2,12}){1,5}[- ]?\s*"
                              r"(?:(?:genes?|mutations?|status|tests?|test results?|results?)\s+){0,3}"
                              r"(?:(?:are|is|were|was|all|both)\s+){0,2}"
                              r"(?:wild[- ]?type|negative|wt|non[- ]?mutated|unmutated)\b", re.I)


def _list_status(text: str, match: ConceptMatch) -> ConceptMatch:
    """A bare gene name inside a list that one status word covers: "wild type EGFR and ALK", "EGFR/ALK negative"."""
    if match.absent or match.key not in _BIOMARKER_KEYS:
        return match
    bare = match.end - match.start <= 8  # only a bare gene name can take its status from a later word
    if _GENE_LIST_BEFORE.search(text[: match.start]) or (bare and _GENE_LIST_AFTER.match(text[match.end :])):
        return ConceptMatch(match.key, match.start, match.end, True)
    return match


@lru_cache(maxsize=16384)
def _find_concepts(text: str) -> tuple[ConceptMatch, ...]:
    found: list[ConceptMatch] = []
    lowered = text.lower()
    for (concept, present, absent), prefilter in zip(compiled_patterns(), concept_prefilters(), strict=True):
        if prefilter is not None and not any(prefix in lowered for prefix in prefilter):
            continue
        if absent is not None:
            found += [ConceptMatch(concept.key, m.start(), m.end(), True) for m in absent.finditer(text)]
        for m in present.finditer(text):
            before = lowered[max(0, m.start() - 14) : m.start()].split()
            after = lowered[m.end() : m.end() + 16].replace("-", " -").split()
            if concept.not_after and before and before[-1].strip("-") in concept.not_after:
                continue
            if concept.not_before and after and (after[0] in concept.not_before or after[0].lstrip("-") in concept.not_before):
                continue
            if concept.key in _BIOMARKER_KEYS and re.search(r"anti-?[\w-]*/?$", lowered[max(0, m.start() - 12) : m.start()]):
                continue  # "anti-PD-1/PD-L1": a drug, not the biomarker
            if concept.key in _BIOMARKER_KEYS and _TEST_CONTEXT.match(lowered[m.end() : m.end() + 40]):
                continue  # "EGFR T790M central testing", "sample for EGFR mutation analysis": a test, not a result
            found.append(ConceptMatch(concept.key, m.start(), m.end(), False))
    found = [_list_status(text, m) for m in found]
    # Where mentions overlap keep the longest ("type 1 diabetes" over "diabetes", "non-smoker" over
    # "smoker"); the longer spelling is the more specific concept.
    kept: list[ConceptMatch] = []
    for match in sorted(found, key=lambda m: (-(m.end - m.start), m.start)):
        if all(match.end <= k.start or k.end <= match.start for k in kept):
            kept.append(match)
    return tuple(sorted(kept, key=lambda m: m.start))
